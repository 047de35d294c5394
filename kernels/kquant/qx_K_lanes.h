// The Q2_K / Q3_K / Q6_K gemms in llama.cpp's AVX2 vec_dot order (kquant/qx_K_gemm_lanes_scalar.h defines it;
// the scalar reference is scalar::gemm_q{2,3,6}_k in kquant/kernels.h). Signatures are GemmFn's
// (type_ops.h). Every variant returns the scalar reference's bits for any shape.
#pragma once

#include <cstddef>
#include <cstdint>

namespace baton::kernels {

#define BATON_KQ_LANES_DECLARE(ns)                                                                                 \
  namespace ns {                                                                                                   \
  void gemm_q2_k_lanes(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, \
                       int64_t n_tok, float* out, size_t out_stride);                                             \
  void gemm_q3_k_lanes(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, \
                       int64_t n_tok, float* out, size_t out_stride);                                             \
  void gemm_q6_k_lanes(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, \
                       int64_t n_tok, float* out, size_t out_stride);                                             \
  }

BATON_KQ_LANES_DECLARE(avx2)    // AVX2 + FMA + F16C (x86-64-v3)
BATON_KQ_LANES_DECLARE(avxvnni)  // the same code with AVX-VNNI (simd256_tier.h)
BATON_KQ_LANES_DECLARE(avx512)  // built for x86-64-v4: the same 256-bit arithmetic, EVEX encodings

#undef BATON_KQ_LANES_DECLARE

// AVX512-VNNI (has_avx512_vnni()): Q6_K with the token-pair kernel for every batch of 2 or more
// tokens (the same bits; one token runs avx512::gemm_q6_k_lanes).
namespace avx512 {
void gemm_q6_k_lanes_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                          int64_t n_tok, float* out, size_t out_stride);
// That token-pair kernel (kquant/q6_K_gemm_rows_avx512vnni.cpp): any n_tok, the scalar bits; past 16 tokens
// the token tiles run inside 16-row slices, so the weights are streamed from DRAM once.
void gemm_q6_k_rows_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                         int64_t n_tok, float* out, size_t out_stride);
}  // namespace avx512

}  // namespace baton::kernels
