// Scalar reference kernels of F32, F16 and BF16 (IEEE binary32, binary16 and bfloat16 bit
// patterns, little-endian). Conversions round to nearest even exactly as ggml's scalar code;
// dot products sum in double, so this is also the accuracy oracle of the SIMD variants.
#include <cstring>

#include "engine/base/fp16.h"
#include "kernels/float_kernels.h"

namespace baton::kernels::scalar {
namespace {

uint16_t load_u16(const uint8_t* p, int64_t i) {
  uint16_t v;
  std::memcpy(&v, p + 2 * i, 2);
  return v;
}

float load_f32(const uint8_t* p, int64_t i) {
  float v;
  std::memcpy(&v, p + 4 * i, 4);
  return v;
}

struct F32 {
  static float get(const uint8_t* p, int64_t i) { return load_f32(p, i); }
};
struct F16 {
  static float get(const uint8_t* p, int64_t i) { return fp16_to_fp32(load_u16(p, i)); }
};
struct BF16 {
  static float get(const uint8_t* p, int64_t i) { return bf16_to_fp32(load_u16(p, i)); }
};

template <class T>
void gemm_float(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
                size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t r = 0; r < n_rows; ++r) {
      const uint8_t* wr = wb + r * w_stride;
      const uint8_t* at = ab + t * a_stride;
      double sum = 0.0;
      for (int64_t i = 0; i < k; ++i)
        sum += static_cast<double>(T::get(wr, i)) * static_cast<double>(T::get(at, i));
      out[t * out_stride + r] = static_cast<float>(sum);
    }
  }
}

}  // namespace

void copy_f32(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, n * sizeof(float)); }

void f32_to_float(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, n * sizeof(float));
}

void f16_to_float(const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(load_u16(p, i));
}

void bf16_to_float(const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(load_u16(p, i));
}

void float_to_f16(const float* src, void* dst, int64_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = fp32_to_fp16(src[i]);
    std::memcpy(p + 2 * i, &h, 2);
  }
}

void float_to_bf16(const float* src, void* dst, int64_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = fp32_to_bf16(src[i]);
    std::memcpy(p + 2 * i, &h, 2);
  }
}

void gemm_f32(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
              size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm_float<F32>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_f16(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
              size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm_float<F16>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_bf16(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm_float<BF16>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

}  // namespace baton::kernels::scalar
