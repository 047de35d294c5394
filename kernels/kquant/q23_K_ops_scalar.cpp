// Scalar reference kernels of Q2_K and Q3_K (layouts in kquant/blocks.h): dequantization as ggml's
// dequantize_row_q2_K / q3_K, and the gemms in llama.cpp's 8-lane order (kquant/qx_K_gemm_lanes_scalar.h).
#include "kernels/kquant/qx_K_gemm_lanes_scalar.h"
#include "kernels/kquant/kernels.h"
#include "kernels/kquant/qx_K_scalar.h"

namespace baton::kernels::scalar {
namespace {

// The 2-bit field of element e in the qs array shared by Q2_K and Q3_K.
int quant_2bit(const uint8_t* qs, int e) {
  const int n = e / 128, j = (e % 128) / 32, l = e % 32;
  return (qs[32 * n + l] >> (2 * j)) & 3;
}

// Q3_K: the unsigned 3-bit quant (0..7, i.e. value + 4) of element e.
int quant_q3(const uint8_t* x, int e) {
  const uint8_t* hmask = x + offsetof(BlockQ3K, hmask);
  const int high = (hmask[e % 32] >> (e / 32)) & 1;
  return quant_2bit(x + offsetof(BlockQ3K, qs), e) | (high << 2);
}

int scale_q3(const uint8_t* x, int s) { return unpack_scale_q3k(s, x + offsetof(BlockQ3K, scales)) - 32; }

int quant_q2(const uint8_t* x, int e) { return quant_2bit(x + offsetof(BlockQ2K, qs), e); }
int scale_q2(const uint8_t* x, int s) { return x[offsetof(BlockQ2K, scales) + s] & 0xF; }

LaneDot dot_q2(const uint8_t* x, const Q8KView& a) {
  const uint8_t* scales = x + offsetof(BlockQ2K, scales);
  LaneDot p;
  lane_sums(x, a, quant_q2, scale_q2, p.lane);
  for (int L = 0; L < 8; ++L)
    p.mins[L] = (scales[2 * L] >> 4) * a.bsums[2 * L] + (scales[2 * L + 1] >> 4) * a.bsums[2 * L + 1];
  p.d = load_f16(x + offsetof(BlockQ2K, d));
  p.dmin = load_f16(x + offsetof(BlockQ2K, dmin));
  return p;
}

LaneDot dot_q3(const uint8_t* x, const Q8KView& a) {
  LaneDot p;
  lane_sums(
      x, a, [](const uint8_t* w, int e) { return quant_q3(w, e) - 4; }, scale_q3, p.lane);
  p.d = load_f16(x + offsetof(BlockQ3K, d));
  return p;
}

}  // namespace

void dequantize_q2_k(const void* src, float* dst, int64_t n) {
  const uint8_t* x = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, x += sizeof(BlockQ2K), dst += kQK_K) {
    const float d = load_f16(x + offsetof(BlockQ2K, d)), dmin = load_f16(x + offsetof(BlockQ2K, dmin));
    const uint8_t* scales = x + offsetof(BlockQ2K, scales);
    for (int s = 0; s < 16; ++s) {
      const float dl = d * static_cast<float>(scales[s] & 0xF), ml = dmin * static_cast<float>(scales[s] >> 4);
      for (int e = 16 * s; e < 16 * s + 16; ++e)
        dst[e] = dl * static_cast<float>(quant_2bit(x + offsetof(BlockQ2K, qs), e)) - ml;
    }
  }
}

void dequantize_q3_k(const void* src, float* dst, int64_t n) {
  const uint8_t* x = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, x += sizeof(BlockQ3K), dst += kQK_K) {
    const float d = load_f16(x + offsetof(BlockQ3K, d));
    for (int s = 0; s < 16; ++s) {
      const float dl = d * static_cast<float>(scale_q3(x, s));
      for (int e = 16 * s; e < 16 * s + 16; ++e) dst[e] = dl * static_cast<float>(quant_q3(x, e) - 4);
    }
  }
}

void gemm_q2_k(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
               float* out, size_t out_stride) {
  gemm_lanes_reference<sizeof(BlockQ2K), true>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride, dot_q2);
}

void gemm_q3_k(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
               float* out, size_t out_stride) {
  gemm_lanes_reference<sizeof(BlockQ3K), false>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride, dot_q3);
}

}  // namespace baton::kernels::scalar
