// F32 / F16 / BF16 gemms in llama.cpp's two summation orders (float/kernels.h): every ISA gives
// bitwise the scalar reference's result in both, over shapes with and without k % 8 / k % 32
// leftovers, and every element equals its own 1x1 call (batch invariance).
#include <catch2/catch.hpp>

#include <cmath>

#include "legacy_test_util.h"

using namespace baton;
using namespace baton::test;
using kernels::Isa;

namespace {

using kernels::GemmFn;

std::vector<float> run_order(GemmFn gemm, int64_t k, Matrix& w, int64_t n_rows, Matrix& a, int64_t n_tok) {
  std::vector<float> out(static_cast<size_t>(n_rows * n_tok), -1.0f);
  gemm(k, w.row(0), w.stride, n_rows, a.row(0), a.stride, n_tok, out.data(), n_rows);
  return out;
}

// The tinyBLAS order written out independently of the kernels, for one F32 dot.
float tinyblas_f32(const std::vector<float>& x, const std::vector<float>& y) {
  float l[8] = {};
  for (size_t i = 0; i < x.size(); ++i) l[i % 8] = std::fma(x[i], y[i], l[i % 8]);
  return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

// ggml_vec_dot_f32's AVX2 order written out, for one F32 dot.
float vec_dot_f32(const std::vector<float>& x, const std::vector<float>& y) {
  const size_t np = x.size() / 32 * 32;
  float acc[4][8] = {};
  for (size_t i = 0; i < np; i += 32)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 8; ++l) acc[j][l] = std::fma(x[i + 8 * j + l], y[i + 8 * j + l], acc[j][l]);
  float f[8];
  for (int l = 0; l < 8; ++l) f[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
  const float t[4] = {f[0] + f[4], f[1] + f[5], f[2] + f[6], f[3] + f[7]};
  float sum = (t[0] + t[1]) + (t[2] + t[3]);
  for (size_t i = np; i < x.size(); ++i) sum = sum + x[i] * y[i];  // not fused
  return sum;
}

}  // namespace

TEST_CASE("F32 gemm orders are llama.cpp's tinyBLAS and ggml_vec_dot_f32 orders") {
  for (int64_t k : {8, 40, 64, 172, 256}) {
    const auto wv = random_normal(static_cast<size_t>(k), 100 + static_cast<uint32_t>(k));
    const auto av = random_normal(static_cast<size_t>(k), 200 + static_cast<uint32_t>(k));
    for (Isa isa : available_isas()) {
      const auto* ops = kernels::find_type_ops(GgmlType::kF32, isa);
      REQUIRE(ops);
      float batch = 0, single = 0;
      ops->gemm(k, wv.data(), 4 * k, 1, av.data(), 4 * k, 1, &batch, 1);
      ops->gemm_single(k, wv.data(), 4 * k, 1, av.data(), 4 * k, 1, &single, 1);
      INFO("k " << k << " " << kernels::isa_name(isa));
      // tinyBLAS needs k % 8 == 0; llama.cpp uses vec_dot otherwise
      CHECK(same_bits(batch, k % 8 == 0 ? tinyblas_f32(wv, av) : vec_dot_f32(wv, av)));
      CHECK(same_bits(single, vec_dot_f32(wv, av)));
    }
  }
}

TEST_CASE("float gemm orders are bitwise equal on every ISA and batch invariant") {
  const int64_t n_rows = 21, n_tok = 13;
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    const auto* ref_ops = kernels::find_type_ops(type, Isa::kScalar);
    REQUIRE(ref_ops);
    REQUIRE(ref_ops->gemm_single);
    for (int64_t k : {1, 7, 8, 24, 32, 40, 64, 100, 172, 256, 264}) {
      const auto wv = random_normal(static_cast<size_t>(n_rows * k), 11 + static_cast<uint32_t>(k));
      const auto av = random_normal(static_cast<size_t>(n_tok * k), 5 + static_cast<uint32_t>(k));
      Matrix w(type, *ref_ops, wv, n_rows, k, 6, 2), a(type, *ref_ops, av, n_tok, k, 2, 6);
      for (bool single : {false, true}) {
        const auto ref = run_order(single ? ref_ops->gemm_single : ref_ops->gemm, k, w, n_rows, a, n_tok);
        for (Isa isa : available_isas()) {
          const auto* ops = kernels::find_type_ops(type, isa);
          const GemmFn gemm = single ? ops->gemm_single : ops->gemm;
          INFO(ggml_type_name(type) << " " << kernels::isa_name(isa) << " k=" << k << (single ? " single" : " batch"));
          for (int64_t nt : {int64_t{1}, int64_t{2}, int64_t{5}, n_tok}) {
            for (int64_t nr : {int64_t{1}, int64_t{3}, int64_t{9}, n_rows}) {
              const auto got = run_order(gemm, k, w, nr, a, nt);
              for (int64_t t = 0; t < nt; ++t)
                for (int64_t r = 0; r < nr; ++r) {
                  INFO("rows " << nr << " toks " << nt << " r " << r << " t " << t);
                  REQUIRE(same_bits(got[t * nr + r], ref[t * n_rows + r]));
                }
            }
          }
        }
      }
    }
  }
}
