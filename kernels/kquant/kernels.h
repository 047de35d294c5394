// Kernels of the K-quant formats (Q2_K Q3_K Q4_K Q5_K Q6_K, and Q8_K for their activations),
// one function per (op, type, ISA). Declared through the kernel kinds
// of core/kernel_kinds.h; layouts in kquant/blocks.h.
//
// What the gemms compute, in every ISA, for one weight row w and one Q8_K activation row a.
// The integer parts are exact whatever the instruction order (they are llama.cpp's), and the
// float steps are the same correctly rounded operations everywhere, so every ISA variant
// returns the same bits as the scalar reference for any n_rows / n_tok / tile position.
//   sumi_j = sub-block scale_j * sum of q_w * q_a over 32-element sub-block j (Q4_K, Q5_K)
//   summ_j = sub-block min_j * (a.bsums[2j] + a.bsums[2j + 1])
// Q4_K gemm (llama.cpp's AVX2 repacked q4_K_8x8 GEMV, which it uses for weights with a row
// count divisible by 8 on rows outside full groups of 4): per super-block
//   acc = fma(float(sum_j sumi_j), f16(w.d) * a.d, acc); accm = fma(float(sum_j summ_j), f16(w.dmin) * a.d, accm)
//   result = acc - accm
// Q4_K gemm_q4_k_grouped (its 4-row GEMM): the same with one step per pair (2p, 2p + 1) of
// sub-blocks, p = 0..3 (TypeOps::gemm_grouped says which rows take it).
// Q5_K gemm (llama.cpp's AVX2 ggml_vec_dot_q5_K_q8_K): 8 float lanes; per super-block
//   lane_L = fma(a.d * f16(w.d), float(sum_j scale_j * sum of the products at positions
//            32j + 4L .. 32j + 4L + 3), lane_L);   summs = fma(-a.d * f16(w.dmin), float(sum_j summ_j), summs)
//   result = ggml's hsum_float_8(lane) + summs
// Q2_K Q3_K Q6_K: the scalar references are declared here; their ISA gemms live in
// kquant/qx_K_lanes.h (llama.cpp's AVX2 vec_dot order, defined in kquant/qx_K_gemm_lanes_scalar.h).
//
// to_float is bit-identical across ISAs and reproduces ggml's dequantize_row_qN_K
// (d1 = d * sc, m1 = dmin * m, x = d1 * q - m1, without FMA contraction).
// quantize_qN_k_ref reproduce ggml's quantize_row_qN_K_ref (what llama-quantize writes without an
// importance matrix); quantize_q8_k reproduces quantize_row_q8_K (the bytes llama.cpp feeds
// its K-quant dot products), except that an all-zero block gets bsums = 0 where ggml leaves
// them unwritten.
#pragma once

#include "kernels/core/kernel_kinds.h"

namespace baton::kernels {

namespace scalar {
ToFloatKernel dequantize_q2_k, dequantize_q3_k, dequantize_q4_k, dequantize_q5_k, dequantize_q6_k, dequantize_q8_k;
FromFloatKernel quantize_q8_k;
FromFloatKernel quantize_q2_k_ref, quantize_q3_k_ref, quantize_q4_k_ref, quantize_q5_k_ref, quantize_q6_k_ref;
GemmKernel gemm_q2_k, gemm_q3_k, gemm_q4_k, gemm_q4_k_grouped, gemm_q5_k, gemm_q6_k;
}  // namespace scalar

// AVX2 + FMA + F16C (x86-64-v3), from kquant/qx_K_ops_simd256.inc; avxvnni: the same body built with
// AVX-VNNI (core/simd256_tier.h; its type table converts with avx2::'s functions).
namespace avx2 {
ToFloatKernel dequantize_q2_k, dequantize_q3_k, dequantize_q4_k, dequantize_q5_k, dequantize_q6_k;
FromFloatKernel quantize_q8_k;
GemmKernel gemm_q4_k, gemm_q4_k_grouped, gemm_q5_k;
}  // namespace avx2
namespace avxvnni {
ToFloatKernel dequantize_q2_k, dequantize_q3_k, dequantize_q4_k, dequantize_q5_k, dequantize_q6_k;
FromFloatKernel quantize_q8_k;
GemmKernel gemm_q4_k, gemm_q4_k_grouped, gemm_q5_k;
}  // namespace avxvnni

// AVX-512 F/BW/VL/DQ (x86-64-v4). The *_vnni gemms also need AVX512-VNNI (has_avx512_vnni()):
// they run the decode row kernel with vpdpbusd for n_tok = 1 and switch to a token-parallel
// kernel built on vpdpbusd when n_tok is large enough.
namespace avx512 {
ToFloatKernel dequantize_q2_k, dequantize_q3_k, dequantize_q4_k, dequantize_q5_k, dequantize_q6_k;
FromFloatKernel quantize_q8_k;
GemmKernel gemm_q4_k, gemm_q4_k_grouped, gemm_q5_k;
GemmKernel gemm_q4_k_vnni, gemm_q4_k_grouped_vnni, gemm_q5_k_vnni;
}  // namespace avx512

}  // namespace baton::kernels
