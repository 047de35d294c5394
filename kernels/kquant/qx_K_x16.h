// Q4_K weights repacked at load into 16-row groups (TypeOps::repack; layout and float order:
// kquant/q4_K_gemm_x16.h): the repack / unrepack permutations and the gemms on the repacked layout,
// per ISA. gemm_q4_k_x16*: n_rows a multiple of 16, w_stride = the dense row bytes; bitwise equal
// to the Q4_K gemm (TypeOps::gemm, llama.cpp's GEMV order) on the rows before repacking.
#pragma once

#include "kernels/core/kernel_kinds.h"

namespace baton::kernels {

namespace scalar {
// Rows [0, n_rows) (n_rows a multiple of 16) to the repacked layout and back (RepackKernel).
RepackKernel repack_q4_k_x16, unrepack_q4_k_x16;
// Q5_K: the same contract, layout kquant/q5_K_gemm_x16.h.
RepackKernel repack_q5_k_x16, unrepack_q5_k_x16;
// Q5_K for AVX2: the same contract, layout kquant/q5_K_gemm_x16p_simd256.inc.
RepackKernel repack_q5_k_x16p, unrepack_q5_k_x16p;
}  // namespace scalar

namespace avx512 {
// gemm_q4_k_x16_grouped: Q4_K's grouped order (TypeOps::gemm_grouped) on repacked groups, bitwise
// gemm_q4_k_grouped on the plain rows. *_vnni: with AVX512-VNNI dpbusd (same integer sums), only
// where has_avx512_vnni().
GemmKernel gemm_q4_k_x16, gemm_q4_k_x16_grouped, gemm_q4_k_x16_vnni, gemm_q4_k_x16_grouped_vnni;
// Q5_K repacked (kquant/q5_K_gemm_x16.h), bitwise the Q5_K gemm (llama.cpp's vec_dot lanes order).
GemmKernel gemm_q5_k_x16, gemm_q5_k_x16_vnni;
}  // namespace avx512

// Q5_K in the x16p layout (kquant/q5_K_gemm_x16p_simd256.inc), bitwise the Q5_K gemm; avxvnni: the
// same body built with AVX-VNNI (core/simd256_tier.h).
namespace avx2 {
GemmKernel gemm_q5_k_x16p;
}  // namespace avx2
namespace avxvnni {
GemmKernel gemm_q5_k_x16p;
}  // namespace avxvnni

}  // namespace baton::kernels
