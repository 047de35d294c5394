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
// Declared through the kernel kinds of core/kernel_kinds.h. Rows of any length
// k >= 1; no alignment is assumed anywhere.
#pragma once

#include "kernels/core/kernel_kinds.h"

namespace baton::kernels {

namespace scalar {
ToFloatKernel f16_to_float, bf16_to_float;
FromFloatKernel float_to_f16, float_to_bf16;
GemmKernel gemm_f32, gemm_f16, gemm_bf16, gemm_f32_single, gemm_f16_single, gemm_bf16_single;
// F32 needs no conversion: these copy (the same for every ISA).
FromFloatKernel copy_f32;
ToFloatKernel f32_to_float;
}  // namespace scalar

namespace avx2 {
ToFloatKernel f16_to_float, bf16_to_float;
FromFloatKernel float_to_f16, float_to_bf16;
GemmKernel gemm_f32, gemm_f16, gemm_bf16, gemm_f32_single, gemm_f16_single, gemm_bf16_single;
}  // namespace avx2

namespace avx512 {
ToFloatKernel f16_to_float, bf16_to_float;
FromFloatKernel float_to_f16, float_to_bf16;
GemmKernel gemm_f32, gemm_f16, gemm_bf16, gemm_f32_single, gemm_f16_single, gemm_bf16_single;
}  // namespace avx512

// llama.cpp's tinyBLAS handles only weights with a multiple of this many rows (and k % 8 == 0).
constexpr int32_t kTinyBlasRowMultiple = 4;

}  // namespace baton::kernels
