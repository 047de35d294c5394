// Scalar reference kernels of Q6_K (layout in kquant/blocks.h): dequantization as ggml's
// dequantize_row_q6_K, and the gemm in llama.cpp's 8-lane order (kquant/qx_K_gemm_lanes_scalar.h).
#include "kernels/kquant/qx_K_gemm_lanes_scalar.h"
#include "kernels/kquant/kernels.h"
#include "kernels/kquant/qx_K_scalar.h"

namespace baton::kernels::scalar {
namespace {

// The unsigned 6-bit quant (0..63, i.e. value + 32) of element e of a super-block.
int quant_q6(const uint8_t* x, int e) {
  const uint8_t* ql = x + offsetof(BlockQ6K, ql);
  const uint8_t* qh = x + offsetof(BlockQ6K, qh);
  const int n = e / 128, part = (e % 128) / 32, l = e % 32;
  const uint8_t low_byte = ql[64 * n + l + (part % 2) * 32];
  const int low = part < 2 ? (low_byte & 0xF) : (low_byte >> 4);
  return low | (((qh[32 * n + l] >> (2 * part)) & 3) << 4);
}

int scale_q6(const uint8_t* x, int s) { return static_cast<int8_t>(x[offsetof(BlockQ6K, scales) + s]); }

// ggml's AVX2 kernel dots the unsigned quants (0..63) and takes the offset off each lane L as
// 32 * (sc[2L] * bsums[2L] + sc[2L + 1] * bsums[2L + 1]): the same total, not the same lanes.
LaneDot dot_q6(const uint8_t* x, const Q8KView& a) {
  LaneDot p;
  lane_sums(x, a, quant_q6, scale_q6, p.lane);
  for (int L = 0; L < 8; ++L)
    p.lane[L] -= 32 * (scale_q6(x, 2 * L) * a.bsums[2 * L] + scale_q6(x, 2 * L + 1) * a.bsums[2 * L + 1]);
  p.d = load_f16(x + offsetof(BlockQ6K, d));
  return p;
}

}  // namespace

void dequantize_q6_k(const void* src, float* dst, int64_t n) {
  const uint8_t* x = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, x += sizeof(BlockQ6K), dst += kQK_K) {
    const float d = load_f16(x + offsetof(BlockQ6K, d));
    for (int e = 0; e < kQK_K; ++e)
      dst[e] = d * static_cast<float>(scale_q6(x, e / 16)) * static_cast<float>(quant_q6(x, e) - 32);
  }
}

void gemm_q6_k(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
               float* out, size_t out_stride) {
  gemm_lanes_reference<sizeof(BlockQ6K), false>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride, dot_q6);
}

}  // namespace baton::kernels::scalar
