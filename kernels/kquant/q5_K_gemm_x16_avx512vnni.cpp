// AVX-512 + VNNI build of the repacked Q5_K gemm (kquant/q5_K_gemm_x16.h): vpdpwssd scales and sums
// the vpmaddubsw pairs (the same exact integers as vpmaddwd + vpaddd, so the same bits).
#pragma GCC target("avx512vnni")

#include "kernels/kquant/q5_K_gemm_x16.h"
#include "kernels/kquant/qx_K_x16.h"

namespace baton::kernels::avx512 {

void gemm_q5_k_x16_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                        int64_t n_tok, float* out, size_t out_stride) {
  q5k_x16::gemm<true>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

}  // namespace baton::kernels::avx512
