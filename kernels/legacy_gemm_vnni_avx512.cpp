// AVX-512 + VNNI gemms of the legacy formats: legacy_gemm_avx512.h compiled with dpbusd.
// The int32 sums equal those of the maddubs/madd variant, so results are bitwise the same.
#pragma GCC target("avx512vnni")

#include "kernels/legacy_gemm_avx512.h"
#include "kernels/legacy_kernels.h"

namespace baton::kernels::avx512 {

void gemm_q4_0_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm<FormatQ4_0, true>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_q4_1_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm<FormatQ4_1, true>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_q5_0_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm<FormatQ5_0, true>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_q5_1_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm<FormatQ5_1, true>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_q8_0_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm<FormatQ8_0, true>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

}  // namespace baton::kernels::avx512
