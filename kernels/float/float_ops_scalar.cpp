// Scalar reference kernels of F32, F16 and BF16 (IEEE binary32, binary16 and bfloat16 bit
// patterns, little-endian). Conversions round to nearest even exactly as ggml's scalar code;
// the dot products define llama.cpp's two summation orders (float/kernels.h), which every SIMD
// variant reproduces bit for bit.
#include <cmath>
#include <cstring>

#include "engine/base/fp16.h"
#include "kernels/float/kernels.h"

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

// tinyBLAS (AVX2): lane j = fma chain over elements j, j+8, ...; hsum ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)).
template <class T>
float dot_tinyblas(const uint8_t* w, const uint8_t* a, int64_t k) {
  float l[8] = {};
  for (int64_t i = 0; i < k; ++i) l[i % 8] = std::fma(T::get(w, i), T::get(a, i), l[i % 8]);
  float s[4];
  for (int j = 0; j < 4; ++j) s[j] = l[j + 4] + l[j];
  return (s[0] + s[2]) + (s[1] + s[3]);
}

// The 4 accumulators x 8 lanes of ggml_vec_dot_* over the blocks of 32, folded (0+2)+(1+3) per
// lane and the two 128-bit halves added: q[j] = lane j + lane j+4 (j < 4). Returns the number
// of elements consumed (k rounded down to 32).
template <class T>
int64_t vec_dot_lanes(const uint8_t* w, const uint8_t* a, int64_t k, float q[4]) {
  const int64_t np = k / 32 * 32;
  float acc[4][8] = {};
  for (int64_t i = 0; i < np; i += 32)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 8; ++l) {
        const int64_t e = i + j * 8 + l;
        acc[j][l] = std::fma(T::get(w, e), T::get(a, e), acc[j][l]);
      }
  float f[8];
  for (int l = 0; l < 8; ++l) f[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
  for (int j = 0; j < 4; ++j) q[j] = f[j] + f[j + 4];
  return np;
}

// ggml_vec_dot_f32: hadd tree (q0+q1)+(q2+q3) in f32, then the leftovers' products added to it
// one by one (rounded product, then the sum: ggml's `sumf += x[i]*y[i]` is not FMA-contracted
// in the golden's build, checked on stories260K's k = 172 against the oracle).
float dot_vec_f32(const uint8_t* w, const uint8_t* a, int64_t k) {
  float q[4];
  const int64_t np = vec_dot_lanes<F32>(w, a, k, q);
  float sum = (q[0] + q[1]) + (q[2] + q[3]);
  for (int64_t i = np; i < k; ++i) sum = sum + F32::get(w, i) * F32::get(a, i);
  return sum;
}

// ggml_vec_dot_f16: hadd tree, then double; leftover products (exact in f32) added in double.
float dot_vec_f16(const uint8_t* w, const uint8_t* a, int64_t k) {
  float q[4];
  const int64_t np = vec_dot_lanes<F16>(w, a, k, q);
  double sum = static_cast<double>((q[0] + q[1]) + (q[2] + q[3]));
  for (int64_t i = np; i < k; ++i) sum += static_cast<double>(F16::get(w, i) * F16::get(a, i));
  return static_cast<float>(sum);
}

// ggml_vec_dot_bf16 (AVX2): movehl tree (q0+q2)+(q1+q3), then double like F16.
float dot_vec_bf16(const uint8_t* w, const uint8_t* a, int64_t k) {
  float q[4];
  const int64_t np = vec_dot_lanes<BF16>(w, a, k, q);
  double sum = static_cast<double>((q[0] + q[2]) + (q[1] + q[3]));
  for (int64_t i = np; i < k; ++i) sum += static_cast<double>(BF16::get(w, i) * BF16::get(a, i));
  return static_cast<float>(sum);
}

using DotFn = float (*)(const uint8_t*, const uint8_t*, int64_t);

void gemm_with(DotFn dot, int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
               int64_t n_tok, float* out, size_t out_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t r = 0; r < n_rows; ++r) out[t * out_stride + r] = dot(wb + r * w_stride, ab + t * a_stride, k);
}

}  // namespace

void copy_f32(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, n * sizeof(float)); }

void f32_to_float(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, n * sizeof(float)); }

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

void gemm_f32(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
              float* out, size_t out_stride) {
  gemm_with(k % 8 == 0 ? dot_tinyblas<F32> : dot_vec_f32, k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_f16(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
              float* out, size_t out_stride) {
  gemm_with(k % 8 == 0 ? dot_tinyblas<F16> : dot_vec_f16, k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_bf16(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
               float* out, size_t out_stride) {
  gemm_with(k % 8 == 0 ? dot_tinyblas<BF16> : dot_vec_bf16, k, w, w_stride, n_rows, a, a_stride, n_tok, out,
            out_stride);
}
void gemm_f32_single(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                     int64_t n_tok, float* out, size_t out_stride) {
  gemm_with(dot_vec_f32, k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_f16_single(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                     int64_t n_tok, float* out, size_t out_stride) {
  gemm_with(dot_vec_f16, k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_bf16_single(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                      int64_t n_tok, float* out, size_t out_stride) {
  gemm_with(dot_vec_bf16, k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

}  // namespace baton::kernels::scalar
