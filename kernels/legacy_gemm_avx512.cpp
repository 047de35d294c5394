// AVX-512 (F/BW/VL/DQ) gemms of the legacy formats; the design is described in
// legacy_gemm_avx512.h. Used on AVX-512 CPUs without VNNI.

#include "kernels/legacy_gemm_avx512.h"
#include "kernels/legacy_kernels.h"

namespace baton::kernels::avx512 {

void gemm_q4_0(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm<FormatQ4_0, false>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_q4_1(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm<FormatQ4_1, false>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_q5_0(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm<FormatQ5_0, false>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_q5_1(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm<FormatQ5_1, false>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_q8_0(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm<FormatQ8_0, false>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

}  // namespace baton::kernels::avx512
