// Kernels of the float formats F32, F16 and BF16, one function per (op, type, ISA). A float
// weight type multiplies activations converted to the same type (llama.cpp's vec_dot_type):
// F16 x F16 and BF16 x BF16 products are exact in f32.
//
// Two summation orders, both llama.cpp's (AVX2 build, see docs/NUMERICS.md), defined by the
// scalar reference and reproduced bit for bit by avx2:: and avx512:: (float/float_gemm_simd.inc):
// - gemm_*: llamafile's tinyBLAS, used by llama.cpp for batches of >= 2 rows: one 8-lane FMA
//   chain per output (lane j sums elements j, j+8, ...), hsum ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)).
//   tinyBLAS needs k % 8 == 0; for other k these use the single-row order.
// - gemm_*_single: ggml_vec_dot_f32/_f16/_bf16, used for one row: blocks of 32 into 4
//   accumulators x 8 lanes, folded (0+2)+(1+3), then the 8 lanes (hadd tree for F32/F16,
//   movehl tree for BF16); the k mod 32 leftovers' products: F32 added to the f32 sum (not
//   fused), F16/BF16 added in double (then rounded to f32).
// Signatures are those of ToFloatFn / FromFloatFn / GemmFn (type_ops.h). Rows of any length
// k >= 1; no alignment is assumed anywhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace baton::kernels {

#define BATON_FLOAT_GEMM_DECL(name)                                                            \
  void name(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,          \
            size_t a_stride, int64_t n_tok, float* out, size_t out_stride);

#define BATON_FLOAT_KERNELS_DECL                                                               \
  void f16_to_float(const void* src, float* dst, int64_t n);                                   \
  void bf16_to_float(const void* src, float* dst, int64_t n);                                  \
  void float_to_f16(const float* src, void* dst, int64_t n);                                   \
  void float_to_bf16(const float* src, void* dst, int64_t n);                                  \
  BATON_FLOAT_GEMM_DECL(gemm_f32)                                                              \
  BATON_FLOAT_GEMM_DECL(gemm_f16)                                                              \
  BATON_FLOAT_GEMM_DECL(gemm_bf16)                                                             \
  BATON_FLOAT_GEMM_DECL(gemm_f32_single)                                                       \
  BATON_FLOAT_GEMM_DECL(gemm_f16_single)                                                       \
  BATON_FLOAT_GEMM_DECL(gemm_bf16_single)

namespace scalar {
BATON_FLOAT_KERNELS_DECL
// F32 needs no conversion: these copy (the same for every ISA).
void copy_f32(const float* src, void* dst, int64_t n);
void f32_to_float(const void* src, float* dst, int64_t n);
}  // namespace scalar

namespace avx2 {
BATON_FLOAT_KERNELS_DECL
}  // namespace avx2

namespace avx512 {
BATON_FLOAT_KERNELS_DECL
}  // namespace avx512

#undef BATON_FLOAT_KERNELS_DECL
#undef BATON_FLOAT_GEMM_DECL

// llama.cpp's tinyBLAS handles only weights with a multiple of this many rows (and k % 8 == 0).
constexpr int32_t kTinyBlasRowMultiple = 4;

}  // namespace baton::kernels
