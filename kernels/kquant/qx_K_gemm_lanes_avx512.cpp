// The Q2_K / Q3_K / Q6_K gemms in llama.cpp's order (kquant/qx_K_gemm_lanes.h), built for x86-64-v4.
#include "kernels/kquant/qx_K_gemm_lanes.h"
#include "kernels/kquant/qx_K_lanes.h"

namespace baton::kernels::avx512 {

void gemm_q2_k_lanes(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, float* out,
                     size_t os) {
  kq_lanes::gemm<kq_lanes::Q2>(k, w, ws, nr, a, as, nt, out, os);
}
void gemm_q3_k_lanes(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, float* out,
                     size_t os) {
  kq_lanes::gemm<kq_lanes::Q3>(k, w, ws, nr, a, as, nt, out, os);
}
void gemm_q6_k_lanes(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, float* out,
                     size_t os) {
  kq_lanes::gemm<kq_lanes::Q6>(k, w, ws, nr, a, as, nt, out, os);
}

}  // namespace baton::kernels::avx512
