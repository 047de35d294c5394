// AVX-512 VNNI build of the repacked Q6_K gemm (kquant_q6k_x16.h). Plain AVX-512 (no VNNI) keeps
// Q6_K in plain rows.
#pragma GCC target("avx512vnni")

#include "kernels/kquant_q6k_x16.h"
#include "kernels/kquant_x16.h"

namespace baton::kernels::avx512 {

void gemm_q6_k_x16_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                        int64_t n_tok, float* out, size_t out_stride) {
  q6k_x16::gemm(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

}  // namespace baton::kernels::avx512
