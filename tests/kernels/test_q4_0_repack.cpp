// Q4_0 weights repacked at load (TypeOps::repack, 16-row groups): gemm_repacked on the
// repacked bytes is bitwise the plain gemm (and the scalar reference) for every ISA variant,
// shape and token count, and MatmulDriver mixes repacked groups with plain tail rows.
#include <catch2/catch.hpp>

#include <cstring>

#include "engine/base/aligned_buffer.h"
#include "kernels/legacy_kernels.h"
#include "kernels/matmul.h"
#include "kernels/thread_pool.h"
#include "legacy_test_util.h"

using namespace baton;
using namespace baton::test;
using kernels::Isa;

namespace {

struct Variant {
  const char* name;
  kernels::GemmFn gemm;
};

// Every repacked gemm this CPU runs (AVX-512 with and without VNNI on a VNNI machine).
std::vector<Variant> repacked_variants() {
  std::vector<Variant> v;
  if (kernels::detected_isa() >= Isa::kAvx2) v.push_back({"avx2", kernels::avx2::gemm_q4_0_x16});
  if (kernels::detected_isa() >= Isa::kAvx512) {
    v.push_back({"avx512", kernels::avx512::gemm_q4_0_x16});
    if (kernels::has_avx512_vnni()) v.push_back({"avx512 vnni", kernels::avx512::gemm_q4_0_x16_vnni});
  }
  return v;
}

// Dense Q4_0 rows and Q8_0 activations from seeded random values.
struct Dense {
  Dense(int64_t n_rows, int64_t n_tok, int64_t k, uint32_t seed)
      : k(k), w_stride(row_bytes(GgmlType::kQ4_0, k)), a_stride(row_bytes(GgmlType::kQ8_0, k)),
        w(w_stride * n_rows), a(a_stride * n_tok) {
    const auto& q4 = ops_for(GgmlType::kQ4_0, Isa::kScalar);
    const auto& q8 = ops_for(GgmlType::kQ8_0, Isa::kScalar);
    const auto wv = random_normal(static_cast<size_t>(n_rows * k), seed);
    const auto av = random_normal(static_cast<size_t>(n_tok * k), seed + 1);
    for (int64_t r = 0; r < n_rows; ++r) q4.from_float(wv.data() + r * k, w.data() + r * w_stride, k);
    for (int64_t t = 0; t < n_tok; ++t) q8.from_float(av.data() + t * k, a.data() + t * a_stride, k);
  }
  int64_t k;
  size_t w_stride, a_stride;
  std::vector<uint8_t> w, a;
};

}  // namespace

TEST_CASE("Q4_0 ops advertise the 16-row repack on AVX2 / AVX-512, not on scalar") {
  CHECK(ops_for(GgmlType::kQ4_0, Isa::kScalar).repack_rows == 0);
  for (Isa isa : available_isas()) {
    if (isa == Isa::kScalar) continue;
    const auto& ops = ops_for(GgmlType::kQ4_0, isa);
    CHECK(ops.repack_rows == 16);
    CHECK(ops.repack != nullptr);
    CHECK(ops.gemm_repacked != nullptr);
  }
  for (GgmlType t : {GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ8_0})
    for (Isa isa : available_isas()) CHECK(ops_for(t, isa).repack_rows == 0);
}

TEST_CASE("repacked Q4_0 gemm is bitwise the plain gemm for every variant and shape") {
  const auto variants = repacked_variants();
  if (variants.empty()) return;
  struct Shape {
    int64_t n_rows, n_tok, k;
  };
  const Shape shapes[] = {{16, 1, 32}, {16, 1, 2048}, {32, 1, 96}, {48, 2, 256}, {16, 3, 64},
                          {32, 4, 128}, {16, 5, 160}, {64, 9, 512}, {32, 1, 5632}};
  uint32_t seed = 100;
  for (const Shape& s : shapes) {
    Dense d(s.n_rows, s.n_tok, s.k, seed += 7);
    std::vector<uint8_t> packed(d.w.size());
    kernels::scalar::repack_q4_0_x16(d.w.data(), packed.data(), s.n_rows, s.k);
    CHECK(packed != d.w);
    std::vector<float> ref(static_cast<size_t>(s.n_rows * s.n_tok));
    kernels::scalar::gemm_q4_0(s.k, d.w.data(), d.w_stride, s.n_rows, d.a.data(), d.a_stride, s.n_tok, ref.data(),
                               static_cast<size_t>(s.n_rows));
    for (const Variant& v : variants) {
      INFO(v.name << " n_rows " << s.n_rows << " n_tok " << s.n_tok << " k " << s.k);
      std::vector<float> out(ref.size(), -1.0f);
      v.gemm(s.k, packed.data(), d.w_stride, s.n_rows, d.a.data(), d.a_stride, s.n_tok, out.data(),
             static_cast<size_t>(s.n_rows));
      CHECK(std::memcmp(out.data(), ref.data(), ref.size() * sizeof(float)) == 0);
      // one group, one token at a time: the same bits (batch invariance)
      for (int64_t g = 0; g < s.n_rows; g += 16) {
        for (int64_t t = 0; t < s.n_tok; ++t) {
          float one[16];
          v.gemm(s.k, packed.data() + g * d.w_stride, d.w_stride, 16, d.a.data() + t * d.a_stride, d.a_stride, 1,
                 one, 16);
          CHECK(std::memcmp(one, ref.data() + t * s.n_rows + g, sizeof one) == 0);
        }
      }
    }
  }
}

TEST_CASE("MatmulDriver runs repacked groups and plain tail rows with the plain results") {
  if (kernels::find_type_ops(GgmlType::kQ4_0, kernels::active_isa())->repack_rows == 0) return;
  const auto& ops = *kernels::find_type_ops(GgmlType::kQ4_0, kernels::active_isa());
  const int64_t n_rows = 16 * 5 + 7, k = 320;
  for (int64_t n_tok : {1, 3, 6}) {
    Dense d(n_rows, n_tok, k, 900 + static_cast<uint32_t>(n_tok));
    std::vector<float> act = random_normal(static_cast<size_t>(n_tok * k), 77);
    AlignedBuffer packed(d.w.size());
    const int64_t n_rep = n_rows / 16 * 16;
    ops.repack(d.w.data(), packed.data(), n_rep, k);
    std::memcpy(packed.as<uint8_t>() + n_rep * d.w_stride, d.w.data() + n_rep * d.w_stride,
                (n_rows - n_rep) * d.w_stride);
    for (int threads : {1, 2}) {
      kernels::ThreadPool pool(threads);
      kernels::MatmulDriver driver(pool);
      auto plain = kernels::WeightView::dense(GgmlType::kQ4_0, d.w.data(), n_rows, k, "blk.0.ffn_up.weight");
      auto rep = kernels::WeightView::dense(GgmlType::kQ4_0, packed.data(), n_rows, k, "blk.0.ffn_up.weight");
      rep.repacked_rows = n_rep;
      std::vector<float> a(static_cast<size_t>(n_tok * n_rows)), b(a.size());
      driver.matmul(plain, act.data(), n_tok, a.data());
      driver.matmul(rep, act.data(), n_tok, b.data());
      INFO("n_tok " << n_tok << " threads " << threads);
      CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
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
