// The matmul driver: partitioning across threads and token tiles must never change a result
// bit, activations are converted with the vec_dot_type's quantizer, bad shapes are refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/base/error.h"
#include "engine/base/fp16.h"
#include "kernels/core/matmul.h"

using namespace baton;
using namespace baton::kernels;

namespace {

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// A test-only kernel family: F32 weights whose activations go through F16 (so the driver's
// conversion path runs), with a sequential per-element reduction (batch invariant by design).
void fake_f16_from_float(const float* src, void* dst, int64_t n) {
  auto* d = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = fp32_to_fp16(src[i]);
}
void fake_f16_to_float(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(s[i]);
}
void fake_f32_to_float(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, n * sizeof(float)); }
void fake_gemm(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
               float* out, size_t out_stride) {
  for (int64_t t = 0; t < n_tok; ++t) {
    const auto* at = reinterpret_cast<const uint16_t*>(static_cast<const char*>(a) + t * a_stride);
    for (int64_t r = 0; r < n_rows; ++r) {
      const auto* wr = reinterpret_cast<const float*>(static_cast<const char*>(w) + r * w_stride);
      float sum = 0;
      for (int64_t i = 0; i < k; ++i) sum += wr[i] * fp16_to_fp32(at[i]);
      out[t * out_stride + r] = sum;
    }
  }
}
const TypeOps kFakeWeightOps{GgmlType::kF32, GgmlType::kF16, fake_f32_to_float, nullptr, fake_gemm};
const TypeOps kFakeActOps{GgmlType::kF16, GgmlType::kF16, fake_f16_to_float, fake_f16_from_float, nullptr};
const MatmulKernels kFakeKernels{&kFakeWeightOps, &kFakeActOps};

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

// Runs w × act for n_tok tokens on `pool`, dense output.
std::vector<float> run(ThreadPool& pool, const WeightView& w, const MatmulKernels* kernels, const float* act,
                       int64_t n_tok, MatmulTuning tuning = {}, std::span<const RowOrder> orders = {}) {
  std::vector<float> out(static_cast<size_t>(n_tok * w.n_rows), -1.0f);
  MatmulDriver driver(pool, tuning);
  MatmulTarget target{w, out.data(), static_cast<size_t>(w.n_rows), kernels};
  driver.matmul(std::span<const MatmulTarget>(&target, 1), act, static_cast<size_t>(w.k), n_tok, orders);
  return out;
}

}  // namespace

TEST_CASE("matmul driver results are bitwise identical for any thread count and batch") {
  ThreadPool pool1(1), pool2(2), pool3(3);
  const int64_t k = 96, n_rows = 301, n_tok = 70;  // several row chunks and three token tiles
  auto w_data = random_floats(static_cast<size_t>(n_rows * k), 1);
  auto act = random_floats(static_cast<size_t>(n_tok * k), 2);
  auto w = WeightView::dense(GgmlType::kF32, w_data.data(), n_rows, k, "test.weight");

  auto ref = run(pool1, w, &kFakeKernels, act.data(), n_tok);
  CHECK(same_bits(ref.data(), run(pool2, w, &kFakeKernels, act.data(), n_tok).data(), ref.size()));
  CHECK(same_bits(ref.data(), run(pool3, w, &kFakeKernels, act.data(), n_tok).data(), ref.size()));
  for (MatmulTuning tuning : {MatmulTuning{32, 8}, MatmulTuning{7, 3}, MatmulTuning{1, 1}})  // other cuts
    CHECK(same_bits(ref.data(), run(pool3, w, &kFakeKernels, act.data(), n_tok, tuning).data(), ref.size()));
  for (int64_t t : {int64_t{0}, int64_t{33}, n_tok - 1}) {
    auto alone = run(pool3, w, &kFakeKernels, act.data() + t * k, 1);
    CHECK(same_bits(alone.data(), ref.data() + t * n_rows, static_cast<size_t>(n_rows)));
  }

  // The value itself: activations rounded to f16, weights f32, summed in order.
  for (int64_t t = 0; t < n_tok; t += 13) {
    for (int64_t r = 0; r < n_rows; r += 17) {
      double expect = 0;
      for (int64_t i = 0; i < k; ++i) expect += double(w_data[r * k + i]) * fp16_to_fp32(fp32_to_fp16(act[t * k + i]));
      CHECK(ref[t * n_rows + r] == Approx(expect).epsilon(1e-5).margin(1e-5));
    }
  }
}

TEST_CASE("fused matmul writes every target with its own output stride") {
  ThreadPool pool(2);
  const int64_t k = 64, n_tok = 5;
  auto wa = random_floats(40 * k, 3), wb = random_floats(24 * k, 4);
  auto act = random_floats(n_tok * 80, 5);  // act rows 80 floats apart, only 64 used
  std::vector<float> out_a(n_tok * 50, 7.0f), out_b(n_tok * 24, 7.0f);
  MatmulTarget targets[] = {
      {WeightView::dense(GgmlType::kF32, wa.data(), 40, k, "a"), out_a.data(), 50, &kFakeKernels},
      {WeightView::dense(GgmlType::kF32, wb.data(), 24, k, "b"), out_b.data(), 24, &kFakeKernels},
  };
  MatmulDriver driver(pool);
  driver.matmul(targets, act.data(), 80, n_tok);

  for (int64_t t = 0; t < n_tok; ++t) {
    std::vector<float> dense_act(act.begin() + t * 80, act.begin() + t * 80 + k);
    ThreadPool one(1);
    auto alone_a = run(one, targets[0].w, &kFakeKernels, dense_act.data(), 1);
    auto alone_b = run(one, targets[1].w, &kFakeKernels, dense_act.data(), 1);
    CHECK(same_bits(alone_a.data(), out_a.data() + t * 50, 40));
    CHECK(same_bits(alone_b.data(), out_b.data() + t * 24, 24));
    for (int64_t r = 40; r < 50; ++r) CHECK(out_a[t * 50 + r] == 7.0f);  // padding untouched
  }
}

TEST_CASE("matmul driver refuses mismatched shapes with messages naming the tensor") {
  ThreadPool pool(1);
  MatmulDriver driver(pool);
  std::vector<float> w(64 * 4), act(64), out(8);
  MatmulTarget targets[] = {
      {WeightView::dense(GgmlType::kF32, w.data(), 4, 64, "blk.0.attn_q.weight"), out.data(), 4, &kFakeKernels},
      {WeightView::dense(GgmlType::kF32, w.data(), 2, 32, "blk.0.attn_k.weight"), out.data() + 4, 2, &kFakeKernels},
  };
  CHECK_THROWS_WITH(driver.matmul(targets, act.data(), 64, 1), Catch::Contains("blk.0.attn_k.weight"));
  CHECK_THROWS_AS(WeightView::dense(GgmlType::kQ4_0, w.data(), 4, 48, "blk.0.ffn_up.weight"), FormatError);
  CHECK_THROWS_WITH(WeightView::dense(GgmlType::kQ4_0, w.data(), 4, 48, "blk.0.ffn_up.weight"),
                    Catch::Contains("blk.0.ffn_up.weight"));
  MatmulTarget short_out{WeightView::dense(GgmlType::kF32, w.data(), 4, 64, "x"), out.data(), 3, &kFakeKernels};
  CHECK_THROWS_AS(driver.matmul(std::span<const MatmulTarget>(&short_out, 1), act.data(), 64, 1), Error);
  CHECK_THROWS_AS(require_matmul_kernels(GgmlType::kIQ2_XXS, Isa::kScalar, "t"), UnsupportedError);
}

TEST_CASE("get_rows dequantizes the selected rows and refuses ids out of range") {
  auto table = random_floats(10 * 16, 6);
  auto view = WeightView::dense(GgmlType::kF32, table.data(), 10, 16, "token_embd.weight");
  std::vector<int32_t> ids = {3, 0, 9, 3};
  std::vector<float> out(ids.size() * 20, 5.0f);
  get_rows(view, ids, out.data(), 20, &kFakeWeightOps);
  for (size_t i = 0; i < ids.size(); ++i) {
    CHECK(same_bits(out.data() + i * 20, table.data() + ids[i] * 16, 16));
    CHECK(out[i * 20 + 16] == 5.0f);
  }
  std::vector<int32_t> bad = {1, 10};
  CHECK_THROWS_WITH(get_rows(view, bad, out.data(), 20, &kFakeWeightOps),
                    Catch::Contains("token_embd.weight") && Catch::Contains("10"));
  std::vector<int32_t> negative = {-1};
  CHECK_THROWS_AS(get_rows(view, negative, out.data(), 20, &kFakeWeightOps), Error);
}

// Every type this build has kernels for, at every ISA this CPU runs: the driver keeps results
// bitwise stable across threads and batches, and agrees with a double-precision product of the
// dequantized weights and dequantized activations.
TEST_CASE("matmul driver is batch and thread invariant for every registered type and ISA") {
  ThreadPool pool1(1), pool3(3);
  const int64_t k = 512, n_rows = 67, n_tok = 7;
  int tested = 0;
  for (uint32_t id = 0; id < 40; ++id) {
    auto info = find_ggml_type(id);
    if (!info) continue;
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512}) {
      if (!isa_supported(isa)) continue;
      const TypeOps* wops = find_type_ops(info->type, isa);
      if (!wops || !wops->gemm || !wops->from_float) continue;
      const TypeOps* aops = find_type_ops(wops->vec_dot_type, isa);
      if (wops->vec_dot_type != GgmlType::kF32 && (!aops || !aops->from_float)) continue;
      const MatmulKernels kernels{wops, aops};
      INFO("type " << info->name << " isa " << isa_name(isa));
      ++tested;

      auto wf = random_floats(static_cast<size_t>(n_rows * k), 10 + id);
      const size_t row_bytes = static_cast<size_t>(k / info->block_size) * info->block_bytes;
      std::vector<uint8_t> wq(row_bytes * n_rows);
      for (int64_t r = 0; r < n_rows; ++r) wops->from_float(wf.data() + r * k, wq.data() + r * row_bytes, k);
      auto w = WeightView::dense(info->type, wq.data(), n_rows, k, "w");
      auto act = random_floats(static_cast<size_t>(n_tok * k), 20 + id);

      auto ref = run(pool1, w, &kernels, act.data(), n_tok);
      REQUIRE(same_bits(ref.data(), run(pool3, w, &kernels, act.data(), n_tok).data(), ref.size()));
      REQUIRE(same_bits(ref.data(), run(pool3, w, &kernels, act.data(), n_tok, MatmulTuning{3, 2}).data(), ref.size()));
      // a token alone, with the order it had in the batch (one sequence of n_tok rows)
      for (int64_t t = 0; t < n_tok; t += 3) {
        const RowOrder order = t < n_tok - n_tok % 4 ? RowOrder::kGrouped : RowOrder::kBatch;
        REQUIRE(
            same_bits(run(pool3, w, &kernels, act.data() + t * k, 1, {}, std::span<const RowOrder>(&order, 1)).data(),
                      ref.data() + t * n_rows, static_cast<size_t>(n_rows)));
      }

      if (!wops->to_float || (wops->vec_dot_type != GgmlType::kF32 && !aops->to_float)) continue;
      // Q8_1 keeps each block's sum as f16 (as ggml does) and Q4_1/Q5_1 multiply it by their
      // min, an error the dequantized product does not have: up to 2^-11 of that term.
      const double rel_tol = wops->vec_dot_type == GgmlType::kQ8_1 ? 5e-4 : 2e-5;
      std::vector<float> wd(static_cast<size_t>(n_rows * k)), ad(static_cast<size_t>(k));
      for (int64_t r = 0; r < n_rows; ++r) wops->to_float(wq.data() + r * row_bytes, wd.data() + r * k, k);
      for (int64_t t = 0; t < n_tok; t += 3) {
        if (wops->vec_dot_type == GgmlType::kF32) {
          std::memcpy(ad.data(), act.data() + t * k, k * sizeof(float));
        } else {
          const auto& vinfo = require_ggml_type(wops->vec_dot_type);
          std::vector<uint8_t> aq(static_cast<size_t>(k / vinfo.block_size) * vinfo.block_bytes);
          aops->from_float(act.data() + t * k, aq.data(), k);
          aops->to_float(aq.data(), ad.data(), k);
        }
        for (int64_t r = 0; r < n_rows; ++r) {
          double expect = 0, magnitude = 0;
          for (int64_t i = 0; i < k; ++i) {
            expect += double(wd[r * k + i]) * ad[i];
            magnitude += std::fabs(double(wd[r * k + i]) * ad[i]);
          }
          REQUIRE(std::fabs(ref[t * n_rows + r] - expect) <= rel_tol * magnitude + 1e-6);
        }
      }
    }
  }
  if (tested == 0) WARN("no type has matmul kernels in this build yet: only the fake kernels were tested");
}

// llama.cpp's kernel choice (docs/NUMERICS.md): a kSingle token takes the type's gemm_single,
// the others its gemm (floats have no grouped order); a weight whose row count is not a
// multiple of gemm_rows_multiple takes gemm_single for every token; no orders = one sequence.
TEST_CASE("matmul driver picks the single-row or the batch order per token") {
  ThreadPool pool2(2);
  const int64_t k = 256, n_tok = 9;
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512}) {
      if (!isa_supported(isa)) continue;
      const TypeOps* wops = find_type_ops(type, isa);
      REQUIRE(wops);
      REQUIRE(wops->gemm_single);
      REQUIRE(wops->gemm_rows_multiple == 4);
      const MatmulKernels kernels{wops, wops};
      INFO(ggml_type_name(type) << " " << isa_name(isa));
      for (int64_t n_rows : {int64_t{64}, int64_t{66}}) {
        auto wf = random_floats(static_cast<size_t>(n_rows * k), 3);
        const size_t rb = static_cast<size_t>(k) * require_ggml_type(type).block_bytes;
        std::vector<uint8_t> wq(rb * n_rows);
        for (int64_t r = 0; r < n_rows; ++r) wops->from_float(wf.data() + r * k, wq.data() + r * rb, k);
        auto w = WeightView::dense(type, wq.data(), n_rows, k, "w");
        auto act = random_floats(static_cast<size_t>(n_tok * k), 4);
        std::vector<uint8_t> aq(rb * n_tok);
        for (int64_t t = 0; t < n_tok; ++t) wops->from_float(act.data() + t * k, aq.data() + t * rb, k);
        const std::vector<uint8_t> flags = {1, 0, 0, 1, 1, 0, 1, 0, 0};
        std::vector<RowOrder> orders;
        for (size_t i = 0; i < flags.size(); ++i)
          orders.push_back(flags[i] ? RowOrder::kSingle : i % 2 ? RowOrder::kGrouped : RowOrder::kBatch);
        auto out = run(pool2, w, &kernels, act.data(), n_tok, MatmulTuning{4, 2}, orders);
        int differ = 0;
        for (int64_t t = 0; t < n_tok; ++t) {
          for (int64_t r = 0; r < n_rows; ++r) {
            float single = 0, batch = 0;
            wops->gemm_single(k, wq.data() + r * rb, rb, 1, aq.data() + t * rb, rb, 1, &single, 1);
            wops->gemm(k, wq.data() + r * rb, rb, 1, aq.data() + t * rb, rb, 1, &batch, 1);
            const bool want_single = flags[t] || n_rows % 4 != 0;
            REQUIRE(same_bits(&out[t * n_rows + r], want_single ? &single : &batch, 1));
            differ += !same_bits(&single, &batch, 1);
          }
        }
        CHECK(differ > 0);  // the two orders really differ somewhere
        // no flags: one token -> single order
        float one = 0;
        wops->gemm_single(k, wq.data(), rb, 1, aq.data(), rb, 1, &one, 1);
        CHECK(same_bits(run(pool2, w, &kernels, act.data(), 1).data(), &one, 1));
      }
    }
  }
}

TEST_CASE("row_orders: single rows, full groups of 4 and the rest, per sequence") {
  std::vector<RowOrder> o;
  const std::vector<uint64_t> seqs = {7, 3, 3, 3, 3, 3, 9, 9, 3, 9, 9, 9};  // 7: 1 row, 3: 6 rows, 9: 5 rows
  row_orders(seqs, o);
  using R = RowOrder;
  const std::vector<RowOrder> want = {R::kSingle,  R::kGrouped, R::kGrouped, R::kGrouped, R::kGrouped, R::kBatch,
                                      R::kGrouped, R::kGrouped, R::kBatch,   R::kGrouped, R::kGrouped, R::kBatch};
  CHECK(o == want);
}
