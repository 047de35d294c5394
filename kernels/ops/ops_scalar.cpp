// The scalar reference of every op in ops.h: plain loops, libm exp, the readable definition
// and the oracle the SIMD variants are tested against. Built for baseline x86-64.
//
// Canonical reduction order for sums of n terms taken in double (rms_norm, softmax): eight
// lanes, lane j summing terms i ≡ j (mod 8) for i < n rounded down to 8; then lanes folded
// as (j, j+4), then (j, j+2), then (0, 1); then the remaining n mod 8 terms in order. The
// SIMD variants keep exactly this order, so these sums agree bit for bit across ISAs.
#include <cmath>
#include <cstring>

#include "engine/base/fp16.h"
#include "kernels/ops/ops_internal.h"

namespace baton::kernels::scalar {
namespace {

template <class Term>
double lane8_sum(int64_t n, Term term) {
  double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const int64_t n8 = n / 8 * 8;
  for (int64_t i = 0; i < n8; i += 8)
    for (int j = 0; j < 8; ++j) lanes[j] += term(i + j);
  for (int j = 0; j < 4; ++j) lanes[j] += lanes[j + 4];
  for (int j = 0; j < 2; ++j) lanes[j] += lanes[j + 2];
  double sum = lanes[0] + lanes[1];
  for (int64_t i = n8; i < n; ++i) sum += term(i);
  return sum;
}

void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  const double sum = lane8_sum(n, [x](int64_t i) { return static_cast<double>(x[i] * x[i]); });
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float s = 1.0f / std::sqrt(mean + eps);
  if (weight) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * s) * weight[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s;
  }
}

void softmax(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  float max = -INFINITY;
  for (int64_t i = 0; i < n; ++i) max = std::fmax(max, x[i]);
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i] - max);
  const double sum = lane8_sum(n, [y](int64_t i) { return static_cast<double>(y[i]); });
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

float silu1(float v) { return v / (1.0f + std::exp(-v)); }

void silu(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = silu1(x[i]);
}

uint32_t bits_of(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}
float float_of(uint32_t u) {
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

}  // namespace

// One lane of ggml's AVX2 ggml_v_expf (ARM optimized-routines expf: x = n·ln2 + b, a degree-5
// polynomial in b, scaled by 2^n through the exponent bits; special scaling for |n| > 126).
float ggml_v_expf1(float x) {
  const float r = 0x1.8p23f;
  const float z = std::fma(x, 0x1.715476p+0f, r);
  const float n = z - r;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  const uint32_t e = bits_of(z) << 23;
  const float k = float_of(e + bits_of(1.0f));
  const float u = b * b;
  const float j =
      std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
               0x1.ffffecp-1f * b);
  if (!(std::fabs(n) > 126.0f)) return std::fma(k, j, k);
  const uint32_t g = n <= 0.0f ? 0x82000000u : 0u;
  const float s1 = float_of(g + 0x7f000000u);
  const float s2 = float_of(e - g);
  if (std::fabs(n) > 192.0f) return s1 * s1;
  return std::fma(s2, j, s2) * s1;
}

// ggml_vec_swiglu_f32 of an AVX2 build: groups of 8 through ggml_v_silu (x / (1 + v_expf(0 - x)))
// times up; the n mod 8 tail with libm expf.
void swiglu_ggml(const float* gate, const float* up, float* y, int64_t n) {
  const int64_t n8 = n / 8 * 8;
  for (int64_t i = 0; i < n8; ++i) {
    const float x = gate[i];
    y[i] = (x / (1.0f + ggml_v_expf1(0.0f - x))) * up[i];
  }
  for (int64_t i = n8; i < n; ++i) y[i] = silu1(gate[i]) * up[i];
}

namespace {

void swiglu(const float* gate, const float* up, float* y, int64_t n) { swiglu_ggml(gate, up, y, n); }

void add(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

void mul(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

void scale(const float* x, float s, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s;
}

void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}

void rope_rotate(const float* cache, float* x, int64_t n_rot, bool neox) {
  const int64_t half = n_rot / 2;
  const float* cos = cache;
  const float* sin = cache + half;
  for (int64_t i = 0; i < half; ++i) {
    float* p0 = neox ? x + i : x + 2 * i;
    float* p1 = neox ? x + i + half : x + 2 * i + 1;
    const float x0 = *p0, x1 = *p1;
    *p0 = std::fma(x0, cos[i], -(x1 * sin[i]));
    *p1 = std::fma(x0, sin[i], x1 * cos[i]);
  }
}

}  // namespace

const OpsTable kOpsTable{Isa::kScalar, rms_norm, softmax, silu,       swiglu,     detail::gelu_by_table,
                         add,          mul,      scale,   f32_to_f16, f16_to_f32, rope_rotate};

}  // namespace baton::kernels::scalar
