// The Q2_K / Q3_K / Q6_K gemms in llama.cpp's AVX2 vec_dot order (kquant/qx_K_gemm_lanes_scalar.h defines it;
// the scalar reference is scalar::gemm_q{2,3,6}_k in kquant/kernels.h). Declared as GemmKernel
// (core/kernel_kinds.h). Every variant returns the scalar reference's bits for any shape.
#pragma once

#include "kernels/core/kernel_kinds.h"

namespace baton::kernels {

// kquant/qx_K_gemm_lanes_simd256.inc, built for each of these ISAs (kernels/CMakeLists.txt); on
// AVX-512 the same 256-bit arithmetic with EVEX encodings.
namespace avx2 {
GemmKernel gemm_q2_k_lanes, gemm_q3_k_lanes, gemm_q6_k_lanes;
}  // namespace avx2
namespace avxvnni {
GemmKernel gemm_q2_k_lanes, gemm_q3_k_lanes, gemm_q6_k_lanes;
}  // namespace avxvnni
namespace avx512 {
GemmKernel gemm_q2_k_lanes, gemm_q3_k_lanes, gemm_q6_k_lanes;
// AVX512-VNNI (has_avx512_vnni()): Q6_K with the token-pair kernel for every batch of 2 or more
// tokens (the same bits; one token runs avx512::gemm_q6_k_lanes).
GemmKernel gemm_q6_k_lanes_vnni;
// That token-pair kernel (kquant/q6_K_gemm_rows_avx512vnni.cpp): any n_tok, the scalar bits; past
// 16 tokens the token tiles run inside 16-row slices, so the weights are streamed from DRAM once.
GemmKernel gemm_q6_k_rows_vnni;
}  // namespace avx512

}  // namespace baton::kernels
