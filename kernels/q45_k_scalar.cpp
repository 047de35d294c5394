// Scalar reference kernels of Q4_K and Q5_K (layouts in blocks_k.h): dequantization as ggml's
// dequantize_row_q4_K / q5_K, and the integer super-block dot products of the gemm contract.
#include "kernels/kquant_kernels.h"
#include "kernels/kquant_scalar.h"

namespace baton::kernels::scalar {
namespace {

constexpr size_t kD = offsetof(BlockQ4K, d), kDmin = offsetof(BlockQ4K, dmin);
static_assert(offsetof(BlockQ5K, d) == kD && offsetof(BlockQ5K, dmin) == kDmin &&
              offsetof(BlockQ5K, scales) == offsetof(BlockQ4K, scales));

// The 5-bit (Q5_K) or 4-bit (Q4_K: qh == nullptr) quant of element e of a super-block.
int quant_q45(const uint8_t* qs, const uint8_t* qh, int e) {
  const int c = e / 64, l = e % 32;
  const bool high_nibble = (e % 64) >= 32;
  int q = high_nibble ? (qs[32 * c + l] >> 4) : (qs[32 * c + l] & 0xF);
  if (qh && (qh[l] >> (2 * c + (high_nibble ? 1 : 0)) & 1)) q += 16;
  return q;
}

void dequantize_q45(const uint8_t* x, float* y, int64_t n, size_t block_bytes, size_t qs_offset,
                    ptrdiff_t qh_offset) {
  for (int64_t i = 0; i < n / kQK_K; ++i, x += block_bytes, y += kQK_K) {
    const float d = load_f16(x + kD), dmin = load_f16(x + kDmin);
    const uint8_t* scales = x + offsetof(BlockQ4K, scales);
    const uint8_t* qh = qh_offset >= 0 ? x + qh_offset : nullptr;
    for (int j = 0; j < 8; ++j) {
      const ScaleMin sm = unpack_scale_min_k4(j, scales);
      const float d1 = d * sm.scale, m1 = dmin * sm.min;
      for (int l = 0; l < 32; ++l) y[32 * j + l] = d1 * quant_q45(x + qs_offset, qh, 32 * j + l) - m1;
    }
  }
}

BlockDot dot_q45(const uint8_t* x, const Q8KView& a, size_t qs_offset, ptrdiff_t qh_offset) {
  const uint8_t* scales = x + offsetof(BlockQ4K, scales);
  const uint8_t* qh = qh_offset >= 0 ? x + qh_offset : nullptr;
  BlockDot p;
  for (int j = 0; j < 8; ++j) {
    const ScaleMin sm = unpack_scale_min_k4(j, scales);
    int32_t sum = 0;
    for (int e = 32 * j; e < 32 * j + 32; ++e) sum += quant_q45(x + qs_offset, qh, e) * a.qs[e];
    p.sumi += sm.scale * sum;
    p.summ += sm.min * (a.bsums[2 * j] + a.bsums[2 * j + 1]);
  }
  p.d = load_f16(x + kD);
  p.dmin = load_f16(x + kDmin);
  return p;
}

}  // namespace

void dequantize_q4_k(const void* src, float* dst, int64_t n) {
  dequantize_q45(static_cast<const uint8_t*>(src), dst, n, sizeof(BlockQ4K), offsetof(BlockQ4K, qs), -1);
}

void dequantize_q5_k(const void* src, float* dst, int64_t n) {
  dequantize_q45(static_cast<const uint8_t*>(src), dst, n, sizeof(BlockQ5K), offsetof(BlockQ5K, qs),
                 offsetof(BlockQ5K, qh));
}

void gemm_q4_k(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
               int64_t n_tok, float* out, size_t out_stride) {
  gemm_reference<sizeof(BlockQ4K), true>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride,
                                         [](const uint8_t* x, const Q8KView& q8) {
                                           return dot_q45(x, q8, offsetof(BlockQ4K, qs), -1);
                                         });
}

void gemm_q5_k(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
               int64_t n_tok, float* out, size_t out_stride) {
  gemm_reference<sizeof(BlockQ5K), true>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride,
                                         [](const uint8_t* x, const Q8KView& q8) {
                                           return dot_q45(x, q8, offsetof(BlockQ5K, qs), offsetof(BlockQ5K, qh));
                                         });
}

}  // namespace baton::kernels::scalar
