// Shared pieces of the scalar K-quant reference kernels (included by *_k_scalar.cpp only):
// unaligned field loads, the super-block integer dot product contract, and the gemm loop
// that turns it into floats exactly as every ISA variant does (see kquant_kernels.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "engine/base/fp16.h"
#include "kernels/blocks_k.h"

namespace baton::kernels::scalar {
namespace {

inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline float load_f16(const uint8_t* p) { return fp16_to_fp32(load_u16(p)); }
inline float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// A Q8_K activation block read field by field (rows carry no alignment promise).
struct Q8KView {
  float d;
  const int8_t* qs;
  int16_t bsums[16];

  explicit Q8KView(const uint8_t* p) {
    d = load_f32(p + offsetof(BlockQ8K, d));
    qs = reinterpret_cast<const int8_t*>(p + offsetof(BlockQ8K, qs));
    std::memcpy(bsums, p + offsetof(BlockQ8K, bsums), sizeof bsums);
  }
};

// The integer part of one super-block product and its two float multipliers.
struct BlockDot {
  int32_t sumi = 0;   // multiplied by f16(w.d)
  int32_t summ = 0;   // multiplied by -f16(w.dmin); 0 for formats without mins
  float d = 0.0f;     // f16(w.d)
  float dmin = 0.0f;  // f16(w.dmin), 0 for formats without mins
};

// ggml's nearest_int: round half to even through the float adder, exact for |x| < 2^22.
inline int nearest_int(float x) {
  const float v = x + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

// out[t * out_stride + r] for every row and token: the float steps of the K-quant gemm contract.
// DotFn: BlockDot (const uint8_t* w_block, const Q8KView& a_block).
template <int kBlockBytes, bool kHasMins, class DotFn>
void gemm_reference(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
                    size_t a_stride, int64_t n_tok, float* out, size_t out_stride, DotFn dot) {
  const int64_t nb = k / kQK_K;
  for (int64_t t = 0; t < n_tok; ++t) {
    const uint8_t* a_row = static_cast<const uint8_t*>(a) + static_cast<size_t>(t) * a_stride;
    for (int64_t r = 0; r < n_rows; ++r) {
      const uint8_t* w_row = static_cast<const uint8_t*>(w) + static_cast<size_t>(r) * w_stride;
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const Q8KView ab(a_row + b * static_cast<int64_t>(sizeof(BlockQ8K)));
        const BlockDot p = dot(w_row + b * kBlockBytes, ab);
        acc = std::fma(p.d * ab.d, static_cast<float>(p.sumi), acc);
        if constexpr (kHasMins) acc = std::fma(-(p.dmin * ab.d), static_cast<float>(p.summ), acc);
      }
      out[static_cast<size_t>(t) * out_stride + static_cast<size_t>(r)] = acc;
    }
  }
}

}  // namespace
}  // namespace baton::kernels::scalar
