// Weights repacked at load (TypeOps::repack, 16-row groups; Q4_0, Q4_K and Q5_K): gemm_repacked on
// the repacked bytes is bitwise the plain gemm (and the scalar reference) for every ISA variant,
// shape and token count; unrepack inverts repack; MatmulDriver mixes repacked groups with plain
// tail rows and sends rows that need another order (Q4_K's grouped rows) through a plain copy.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "engine/base/aligned_buffer.h"
#include "engine/base/fp16.h"
#include "kernels/kquant/kernels.h"
#include "kernels/kquant/qx_K_x16.h"
#include "kernels/block32/kernels.h"
#include "kernels/core/matmul.h"
#include "kernels/core/thread_pool.h"
#include "legacy_test_util.h"

using namespace baton;
using namespace baton::test;
using kernels::Isa;

namespace {

struct Variant {
  const char* name;
  kernels::GemmFn gemm;
  Isa layout;  // whose type table's repack makes the layout this gemm reads
};

// Every repacked gemm of `type` this CPU runs (AVX-512 with and without VNNI on a VNNI machine).
std::vector<Variant> repacked_variants(GgmlType type) {
  namespace k = kernels;
  std::vector<Variant> v;
  if (k::isa_supported(Isa::kAvx2)) {
    if (type == GgmlType::kQ4_0) v.push_back({"avx2", k::avx2::gemm_q4_0_x16, Isa::kAvx2});
    if (type == GgmlType::kQ5_K) v.push_back({"avx2", k::avx2::gemm_q5_k_x16p, Isa::kAvx2});
  }
  if (k::isa_supported(Isa::kAvxVnni)) {
    if (type == GgmlType::kQ4_0) v.push_back({"avxvnni", k::avxvnni::gemm_q4_0_x16, Isa::kAvxVnni});
    if (type == GgmlType::kQ5_K) v.push_back({"avxvnni", k::avxvnni::gemm_q5_k_x16p, Isa::kAvxVnni});
  }
  if (k::isa_supported(Isa::kAvx512)) {
    const bool vnni = k::has_avx512_vnni();
    switch (type) {
      case GgmlType::kQ4_0:
        v.push_back({"avx512", k::avx512::gemm_q4_0_x16, Isa::kAvx512});
        if (vnni) v.push_back({"avx512 vnni", k::avx512::gemm_q4_0_x16_vnni, Isa::kAvx512});
        break;
      case GgmlType::kQ4_K:
        v.push_back({"avx512", k::avx512::gemm_q4_k_x16, Isa::kAvx512});
        if (vnni) v.push_back({"avx512 vnni", k::avx512::gemm_q4_k_x16_vnni, Isa::kAvx512});
        break;
      case GgmlType::kQ5_K:
        v.push_back({"avx512", k::avx512::gemm_q5_k_x16, Isa::kAvx512});
        if (vnni) v.push_back({"avx512 vnni", k::avx512::gemm_q5_k_x16_vnni, Isa::kAvx512});
        break;
      default: break;
    }
  }
  return v;
}

// Dense weights of `type` and activations in its vec_dot_type from seeded random values.
struct Dense {
  Dense(GgmlType type, int64_t n_rows, int64_t n_tok, int64_t k, uint32_t seed)
      : k(k),
        w_stride(row_bytes(type, k)),
        a_stride(row_bytes(ops_for(type, Isa::kScalar).vec_dot_type, k)),
        w(w_stride * n_rows),
        a(a_stride * n_tok) {
    const auto& wq = ops_for(type, Isa::kScalar);
    const auto& aq = ops_for(wq.vec_dot_type, Isa::kScalar);
    const auto wv = random_normal(static_cast<size_t>(n_rows * k), seed);
    const auto av = random_normal(static_cast<size_t>(n_tok * k), seed + 1);
    for (int64_t r = 0; r < n_rows; ++r) wq.from_float(wv.data() + r * k, w.data() + r * w_stride, k);
    for (int64_t t = 0; t < n_tok; ++t) aq.from_float(av.data() + t * k, a.data() + t * a_stride, k);
  }
  int64_t k;
  size_t w_stride, a_stride;
  std::vector<uint8_t> w, a;
};

struct Shape {
  int64_t n_rows, n_tok, k;
};

void check_type(GgmlType type, std::initializer_list<Shape> shapes) {
  const auto variants = repacked_variants(type);
  if (variants.empty()) return;
  const auto& scalar = ops_for(type, Isa::kScalar);
  uint32_t seed = 100;
  for (const Shape& s : shapes) {
    Dense d(type, s.n_rows, s.n_tok, s.k, seed += 7);
    std::vector<float> ref(static_cast<size_t>(s.n_rows * s.n_tok));
    scalar.gemm(s.k, d.w.data(), d.w_stride, s.n_rows, d.a.data(), d.a_stride, s.n_tok, ref.data(),
                static_cast<size_t>(s.n_rows));
    for (const Variant& v : variants) {
      INFO(ggml_type_name(type) << " " << v.name << " n_rows " << s.n_rows << " n_tok " << s.n_tok << " k " << s.k);
      const auto& ops = ops_for(type, v.layout);
      std::vector<uint8_t> packed(d.w.size()), back(d.w.size());
      ops.repack(d.w.data(), packed.data(), s.n_rows, s.k);
      CHECK(packed != d.w);
      ops.unrepack(packed.data(), back.data(), s.n_rows, s.k);
      CHECK(back == d.w);
      std::vector<float> out(ref.size(), -1.0f);
      v.gemm(s.k, packed.data(), d.w_stride, s.n_rows, d.a.data(), d.a_stride, s.n_tok, out.data(),
             static_cast<size_t>(s.n_rows));
      CHECK(std::memcmp(out.data(), ref.data(), ref.size() * sizeof(float)) == 0);
      // one group, one token at a time: the same bits (batch invariance)
      for (int64_t g = 0; g < s.n_rows; g += 16) {
        for (int64_t t = 0; t < s.n_tok; ++t) {
          float one[16];
          v.gemm(s.k, packed.data() + g * d.w_stride, d.w_stride, 16, d.a.data() + t * d.a_stride, d.a_stride, 1, one,
                 16);
          CHECK(std::memcmp(one, ref.data() + t * s.n_rows + g, sizeof one) == 0);
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("Q4_0 and Q5_K advertise the 16-row repack on AVX2 / AVX-512, Q4_K on AVX-512, not on scalar") {
  // Q4_K on AVX2 stays plain: a repacked AVX2 Q4_K kernel measured slower (kquant/q4_K_gemm_x16.h)
  for (Isa isa : available_isas())
    if (isa != Isa::kAvx512) CHECK(ops_for(GgmlType::kQ4_K, isa).repack_rows == 0);
  for (GgmlType t : {GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kQ5_K}) {
    CHECK(ops_for(t, Isa::kScalar).repack_rows == 0);
    for (Isa isa : available_isas()) {
      if (isa == Isa::kScalar || (t == GgmlType::kQ4_K && isa != Isa::kAvx512)) continue;
      const auto& ops = ops_for(t, isa);
      CHECK(ops.repack_rows == 16);
      CHECK(ops.repack != nullptr);
      CHECK(ops.unrepack != nullptr);
      CHECK(ops.gemm_repacked != nullptr);
    }
  }
  for (GgmlType t : {GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ8_0, GgmlType::kQ6_K})
    for (Isa isa : available_isas()) CHECK(ops_for(t, isa).repack_rows == 0);
}

TEST_CASE("repacked Q4_0 gemm is bitwise the plain gemm for every variant and shape") {
  check_type(GgmlType::kQ4_0, {{16, 1, 32},
                               {16, 1, 2048},
                               {32, 1, 96},
                               {48, 2, 256},
                               {16, 3, 64},
                               {32, 4, 128},
                               {16, 5, 160},
                               {64, 9, 512},
                               {32, 1, 5632}});
}

TEST_CASE("repacked Q4_K gemm is bitwise the plain gemm for every variant and shape") {
  check_type(GgmlType::kQ4_K, {{16, 1, 256},
                               {16, 1, 2048},
                               {32, 2, 512},
                               {48, 3, 256},
                               {16, 5, 768},
                               {32, 8, 512},
                               {16, 9, 256},
                               {16, 17, 512},
                               {32, 1, 5632}});
}

TEST_CASE("repacked Q5_K gemm is bitwise the plain gemm for every variant and shape") {
  // token counts cover every pass size of the kernel (8, 4, 2, 1) and their mixes
  check_type(GgmlType::kQ5_K, {{16, 1, 256},
                               {16, 1, 2048},
                               {32, 2, 512},
                               {48, 3, 256},
                               {16, 5, 768},
                               {16, 7, 256},
                               {32, 8, 512},
                               {16, 15, 256},
                               {16, 17, 512},
                               {32, 1, 5632}});
}

namespace {

// Random weight bytes (finite d / dmin), activations at both ends of int8 and every quant and
// scale at its maximum in the first group's first super-block: the bounds the kernels' int16
// partial sums rely on. Q4_K also in its grouped (prompt) order.
void check_extremes(GgmlType type) {
  const auto variants = repacked_variants(type);
  if (variants.empty()) return;
  const auto& scalar = ops_for(type, Isa::kScalar);
  const int64_t n_rows = 32, n_tok = 11, k = 768;
  const size_t w_stride = row_bytes(type, k), a_stride = row_bytes(GgmlType::kQ8_K, k);
  const size_t block_bytes = row_bytes(type, 256);
  std::mt19937 rng(4242);
  std::vector<uint8_t> w(w_stride * n_rows), a(a_stride * n_tok);
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  for (auto& b : a) b = static_cast<uint8_t>(rng());
  // finite scales: f16 d / dmin from small random values; Q8_K d a small float
  std::uniform_real_distribution<float> small(-0.01f, 0.01f);
  for (int64_t r = 0; r < n_rows; ++r)
    for (int64_t b = 0; b < k / 256; ++b) {
      uint8_t* blk = w.data() + r * w_stride + b * block_bytes;
      for (int f = 0; f < 2; ++f) {
        const uint16_t h = fp32_to_fp16(small(rng));
        std::memcpy(blk + 2 * f, &h, 2);
      }
    }
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t b = 0; b < k / 256; ++b) {
      uint8_t* blk = a.data() + t * a_stride + b * 292;
      const float d = small(rng);
      std::memcpy(blk, &d, 4);
      if (t == 0) std::memset(blk + 4, 0x80, 256);  // every activation -128
      if (t == 1) std::memset(blk + 4, 0x7F, 256);  // every activation 127
      // A Q8_K block's bsums are the sums of its 16-quant groups (the kernels add them in int16
      // pairs, kquant/q8_K_bsum_pairs.h): random quants, consistent sums.
      for (int grp = 0; grp < 16; ++grp) {
        int sum = 0;
        for (int i = 0; i < 16; ++i) sum += static_cast<int8_t>(blk[4 + 16 * grp + i]);
        const auto bsum = static_cast<int16_t>(sum);
        std::memcpy(blk + 260 + 2 * grp, &bsum, 2);
      }
    }
  // weights with every quant at its maximum and the largest scales in the first group's first
  // super-block
  for (int64_t r = 0; r < 16; ++r) std::memset(w.data() + r * w_stride + 4, 0xFF, block_bytes - 4);
  std::vector<float> ref(static_cast<size_t>(n_rows * n_tok));
  scalar.gemm(k, w.data(), w_stride, n_rows, a.data(), a_stride, n_tok, ref.data(), static_cast<size_t>(n_rows));
  struct Check {
    Variant v;
    const std::vector<float>* want;
  };
  std::vector<Check> checks;
  for (const Variant& v : variants) checks.push_back({v, &ref});
  std::vector<float> ref_grouped(ref.size());
  if (type == GgmlType::kQ4_K) {  // the prompt rows' order, on the same repacked groups
    kernels::scalar::gemm_q4_k_grouped(k, w.data(), w_stride, n_rows, a.data(), a_stride, n_tok, ref_grouped.data(),
                                       static_cast<size_t>(n_rows));
    checks.push_back({{"avx512 grouped", kernels::avx512::gemm_q4_k_x16_grouped, Isa::kAvx512}, &ref_grouped});
    if (kernels::has_avx512_vnni())
      checks.push_back(
          {{"avx512 vnni grouped", kernels::avx512::gemm_q4_k_x16_grouped_vnni, Isa::kAvx512}, &ref_grouped});
  }
  for (const auto& [v, want] : checks) {
    INFO(ggml_type_name(type) << " " << v.name);
    std::vector<uint8_t> packed(w.size());
    ops_for(type, v.layout).repack(w.data(), packed.data(), n_rows, k);
    std::vector<float> out(ref.size(), -1.0f);
    v.gemm(k, packed.data(), w_stride, n_rows, a.data(), a_stride, n_tok, out.data(), static_cast<size_t>(n_rows));
    CHECK(std::memcmp(out.data(), want->data(), ref.size() * sizeof(float)) == 0);
  }
}

}  // namespace

TEST_CASE("repacked Q4_K and Q5_K gemms are bitwise the plain gemm on random bytes and extreme activations") {
  check_extremes(GgmlType::kQ4_K);
  check_extremes(GgmlType::kQ5_K);
}

TEST_CASE("MatmulDriver runs repacked groups and plain tail rows with the plain results") {
  for (GgmlType type : {GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kQ5_K}) {
    const auto& ops = *kernels::find_type_ops(type, kernels::active_isa());
    if (ops.repack_rows == 0) continue;
    const int64_t n_rows = 16 * 5 + 7, k = type == GgmlType::kQ4_0 ? 320 : 512;
    // 6 tokens of one sequence: Q4_K rows 0..3 take the grouped order (through a plain copy),
    // 4..5 the repacked gemm
    for (int64_t n_tok : {1, 3, 6}) {
      Dense d(type, n_rows, n_tok, k, 900 + static_cast<uint32_t>(n_tok));
      std::vector<float> act = random_normal(static_cast<size_t>(n_tok * k), 77);
      AlignedBuffer packed(d.w.size());
      const int64_t n_rep = n_rows / 16 * 16;
      ops.repack(d.w.data(), packed.data(), n_rep, k);
      std::memcpy(packed.as<uint8_t>() + n_rep * d.w_stride, d.w.data() + n_rep * d.w_stride,
                  (n_rows - n_rep) * d.w_stride);
      for (int threads : {1, 2}) {
        kernels::ThreadPool pool(threads);
        kernels::MatmulDriver driver(pool);
        auto plain = kernels::WeightView::dense(type, d.w.data(), n_rows, k, "blk.0.ffn_up.weight");
        auto rep = kernels::WeightView::dense(type, packed.data(), n_rows, k, "blk.0.ffn_up.weight");
        rep.repacked_rows = n_rep;
        std::vector<float> a(static_cast<size_t>(n_tok * n_rows)), b(a.size());
        driver.matmul(plain, act.data(), n_tok, a.data());
        driver.matmul(rep, act.data(), n_tok, b.data());
        INFO(ggml_type_name(type) << " n_tok " << n_tok << " threads " << threads);
        CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("MatmulDriver refuses a repacked row count that is not whole groups") {
  if (kernels::find_type_ops(GgmlType::kQ4_0, kernels::active_isa())->repack_rows == 0) return;
  std::vector<uint8_t> w(row_bytes(GgmlType::kQ4_0, 64) * 32);
  auto view = kernels::WeightView::dense(GgmlType::kQ4_0, w.data(), 32, 64, "blk.3.attn_q.weight");
  view.repacked_rows = 8;
  kernels::ThreadPool pool(1);
  kernels::MatmulDriver driver(pool);
  std::vector<float> act(64, 0.5f), out(32);
  CHECK_THROWS_WITH(driver.matmul(view, act.data(), 1, out.data()),
                    Catch::Contains("blk.3.attn_q.weight") && Catch::Contains("8 repacked rows of 32"));
}
