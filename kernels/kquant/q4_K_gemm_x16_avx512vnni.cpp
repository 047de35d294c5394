// AVX-512 + VNNI build of the repacked Q4_K gemm (kquant/q4_K_gemm_x16.h): dpbusd for the integer
// sums (the same exact integers as maddubs/madd, so the same bits).
#pragma GCC target("avx512vnni")

#include "kernels/kquant/q4_K_gemm_x16.h"
#include "kernels/kquant/qx_K_x16.h"

namespace baton::kernels::avx512 {

void gemm_q4_k_x16_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                        int64_t n_tok, float* out, size_t out_stride) {
  q4k_x16::gemm<true>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

void gemm_q4_k_x16_grouped_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
                                size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  q4k_x16::gemm<true, true>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

}  // namespace baton::kernels::avx512
