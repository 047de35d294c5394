// The Q6_K gemm of the AVX512-VNNI type table: one token (decode of one sequence, memory-bound)
// runs the ymm lanes kernel (kquant/qx_K_gemm_lanes.h); every batch - the decode rows of a continuous
// batch and prompts alike - the token-pair kernel of kquant/q6_K_gemm_rows_avx512vnni.cpp. Both return the
// scalar reference's bits (kquant/qx_K_gemm_lanes_scalar.h). The token-parallel prefill kernel this file held
// before (16 tokens per zmm, activations transposed per call) lost to the token-pair kernel at
// every batch size (docs/BENCHMARKS.md, Kernel notes).
#include "kernels/kquant/qx_K_lanes.h"

namespace baton::kernels::avx512 {

void gemm_q6_k_lanes_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                          int64_t n_tok, float* out, size_t out_stride) {
  if (n_tok == 1) {
    gemm_q6_k_lanes(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
    return;
  }
  gemm_q6_k_rows_vnni(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

}  // namespace baton::kernels::avx512
