// Shared pieces of the scalar K-quant reference kernels (included by *_k_scalar.cpp and
// kquant/qx_K_gemm_lanes_scalar.h only): unaligned field loads, a Q8_K activation block view, ggml's
// nearest_int. Each format's float order lives with its kernel (see kquant/kernels.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "engine/base/fp16.h"
#include "kernels/kquant/blocks.h"

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

// ggml's nearest_int: round half to even through the float adder, exact for |x| < 2^22.
inline int nearest_int(float x) {
  const float v = x + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

}  // namespace
}  // namespace baton::kernels::scalar
