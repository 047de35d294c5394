// AVX-512 build of the repacked Q4_K gemm (kquant/q4_K_gemm_x16.h): 16 rows in one zmm pass.
#include "kernels/kquant/q4_K_gemm_x16.h"
#include "kernels/kquant/qx_K_x16.h"

namespace baton::kernels::avx512 {

void gemm_q4_k_x16(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                   int64_t n_tok, float* out, size_t out_stride) {
  q4k_x16::gemm<false>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

void gemm_q4_k_x16_grouped(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                           int64_t n_tok, float* out, size_t out_stride) {
  q4k_x16::gemm<false, true>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

}  // namespace baton::kernels::avx512
