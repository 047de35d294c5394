// Scalar Q8_K kernels: the activation quantizer of the K-quant dot products (byte-identical to
// ggml's quantize_row_q8_K) and its dequantizer.
#include <algorithm>
#include <cmath>

#include "kernels/kquant/kernels.h"
#include "kernels/kquant/qx_K_scalar.h"

namespace baton::kernels::scalar {

void quantize_q8_k(const float* src, void* dst, int64_t n) {
  uint8_t* y = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, src += kQK_K, y += sizeof(BlockQ8K)) {
    BlockQ8K block{};
    // The signed value of largest magnitude (the first one on ties) maps to -127.
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK_K; ++j) {
      const float ax = std::fabs(src[j]);
      if (ax > amax) {
        amax = ax;
        max = src[j];
      }
    }
    if (amax != 0.0f) {
      const float iscale = -127.0f / max;
      for (int j = 0; j < kQK_K; ++j) block.qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * src[j])));
      for (int s = 0; s < kQK_K / 16; ++s) {
        int sum = 0;
        for (int j = 0; j < 16; ++j) sum += block.qs[16 * s + j];
        block.bsums[s] = static_cast<int16_t>(sum);
      }
      block.d = 1.0f / iscale;
    }
    std::memcpy(y, &block, sizeof block);
  }
}

void dequantize_q8_k(const void* src, float* dst, int64_t n) {
  const uint8_t* x = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, x += sizeof(BlockQ8K), dst += kQK_K) {
    const Q8KView b(x);
    for (int j = 0; j < kQK_K; ++j) dst[j] = b.d * static_cast<float>(b.qs[j]);
  }
}

}  // namespace baton::kernels::scalar
