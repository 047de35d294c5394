// AVX2+FMA+F16C variants of the ops in ops.h (built with -march=x86-64-v3). Same reduction
// order as the scalar reference (see ops_scalar.cpp); exp is avx2::exp_ps. No inline library
// functions (std::sqrt ...) here: an AVX2 copy of one could replace the generic one at link time.
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "kernels/ops/ops_internal.h"
#include "kernels/ops/ops_math_avx2.h"

namespace baton::kernels::avx2 {
namespace {

// Loads the first `rem` (< 8) floats of p, zero elsewhere.
__m256 load_tail(const float* p, int64_t rem) {
  float buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::memcpy(buf, p, static_cast<size_t>(rem) * sizeof(float));
  return _mm256_loadu_ps(buf);
}

void store_tail(float* p, __m256 v, int64_t rem) {
  float buf[8];
  _mm256_storeu_ps(buf, v);
  std::memcpy(p, buf, static_cast<size_t>(rem) * sizeof(float));
}

void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  const int64_t n8 = n / 8 * 8;
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  for (int64_t i = 0; i < n8; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    accumulate_pd(_mm256_mul_ps(v, v), lo, hi);
  }
  double sum = fold_pd(lo, hi);
  for (int64_t i = n8; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float s = 1.0f / __builtin_sqrtf(mean + eps);
  const __m256 vs = _mm256_set1_ps(s);
  int64_t i = 0;
  if (weight) {
    for (; i < n8; i += 8)
      _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs), _mm256_loadu_ps(weight + i)));
    for (; i < n; ++i) y[i] = (x[i] * s) * weight[i];
  } else {
    for (; i < n8; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vs));
    for (; i < n; ++i) y[i] = x[i] * s;
  }
}

void softmax(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  const int64_t n8 = n / 8 * 8;
  __m256 vmax = _mm256_set1_ps(-__builtin_inff());
  for (int64_t i = 0; i < n8; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
  float max = hmax_ps(vmax);
  for (int64_t i = n8; i < n; ++i) max = __builtin_fmaxf(max, x[i]);

  const __m256 vm = _mm256_set1_ps(max);
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  for (int64_t i = 0; i < n8; i += 8) {
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    _mm256_storeu_ps(y + i, e);
    accumulate_pd(e, lo, hi);
  }
  double sum = fold_pd(lo, hi);
  if (n8 < n) {
    float e[8];
    _mm256_storeu_ps(e, exp_ps(_mm256_sub_ps(load_tail(x + n8, n - n8), vm)));
    for (int64_t i = n8; i < n; ++i) {
      y[i] = e[i - n8];
      sum += static_cast<double>(y[i]);
    }
  }
  const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / sum));
  int64_t i = 0;
  for (; i < n8; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), inv));
  for (; i < n; ++i) y[i] *= _mm256_cvtss_f32(inv);
}

__m256 silu_ps(__m256 v) {
  const __m256 neg = _mm256_xor_ps(v, _mm256_set1_ps(-0.0f));
  return _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), exp_ps(neg)));
}

void silu(const float* x, float* y, int64_t n) {
  const int64_t n8 = n / 8 * 8;
  for (int64_t i = 0; i < n8; i += 8) _mm256_storeu_ps(y + i, silu_ps(_mm256_loadu_ps(x + i)));
  if (n8 < n) store_tail(y + n8, silu_ps(load_tail(x + n8, n - n8)), n - n8);
}

}  // namespace

// ggml's AVX2 ggml_v_expf, lane for lane (see scalar::swiglu_ggml for the definition).
__m256 ggml_v_expf(__m256 x) {
  const __m256 r = _mm256_set1_ps(0x1.8p23f);
  const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
  const __m256 n = _mm256_sub_ps(z, r);
  const __m256 b =
      _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
  const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(z), 23);
  const __m256 k = _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_castps_si256(_mm256_set1_ps(1))));
  const __m256 abs_n = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), n);
  const __m256 c = _mm256_cmp_ps(abs_n, _mm256_set1_ps(126), _CMP_GT_OQ);
  const __m256 u = _mm256_mul_ps(b, b);
  const __m256 j = _mm256_fmadd_ps(
      _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                      _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
      u, _mm256_mul_ps(_mm256_set1_ps(0x1.ffffecp-1f), b));
  const __m256 plain = _mm256_fmadd_ps(k, j, k);
  if (!_mm256_movemask_ps(c)) return plain;
  const __m256i g = _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ)),
                                     _mm256_set1_epi32(static_cast<int>(0x82000000u)));
  const __m256 s1 = _mm256_castsi256_ps(_mm256_add_epi32(g, _mm256_set1_epi32(0x7f000000)));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_sub_epi32(e, g));
  const __m256 d = _mm256_cmp_ps(abs_n, _mm256_set1_ps(192), _CMP_GT_OQ);
  const __m256 scaled = _mm256_mul_ps(_mm256_fmadd_ps(s2, j, s2), s1);
  return _mm256_blendv_ps(_mm256_blendv_ps(plain, scaled, c), _mm256_mul_ps(s1, s1), d);
}

void swiglu_ggml(const float* gate, const float* up, float* y, int64_t n) {
  const int64_t n8 = n / 8 * 8;
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int64_t i = 0; i < n8; i += 8) {
    const __m256 x = _mm256_loadu_ps(gate + i);
    const __m256 e = ggml_v_expf(_mm256_sub_ps(_mm256_setzero_ps(), x));
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
  }
  if (n8 < n) scalar::swiglu_ggml(gate + n8, up + n8, y + n8, n - n8);
}

namespace {

void add(const float* a, const float* b, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  for (; i < n; ++i) y[i] = a[i] + b[i];
}

void mul(const float* a, const float* b, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  for (; i < n; ++i) y[i] = a[i] * b[i];
}

void scale(const float* x, float s, float* y, int64_t n) {
  const __m256 vs = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vs));
  for (; i < n; ++i) y[i] = x[i] * s;
}

void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  if (i < n) {
    uint16_t buf[8];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(buf),
                     _mm256_cvtps_ph(load_tail(x + i, n - i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    std::memcpy(y + i, buf, static_cast<size_t>(n - i) * sizeof(uint16_t));
  }
}

void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  if (i < n) {
    uint16_t buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::memcpy(buf, x + i, static_cast<size_t>(n - i) * sizeof(uint16_t));
    store_tail(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(buf))), n - i);
  }
}

}  // namespace

// As ggml's rope (rotate_pairs) compiled with FMA contraction: x0' = fma(x0, c, -(x1·s)),
// x1' = fma(x0, s, x1·c); bitwise the scalar reference. The AVX-512 table uses it too.
void rope_rotate_ggml(const float* cache, float* x, int64_t n_rot, bool neox) {
  const int64_t half = n_rot / 2;
  const float* cos = cache;
  const float* sin = cache + half;
  int64_t i = 0;  // pair index
  if (neox) {
    for (; i + 8 <= half; i += 8) {
      const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + half);
      const __m256 c = _mm256_loadu_ps(cos + i), s = _mm256_loadu_ps(sin + i);
      _mm256_storeu_ps(x + i, _mm256_fmsub_ps(x0, c, _mm256_mul_ps(x1, s)));
      _mm256_storeu_ps(x + i + half, _mm256_fmadd_ps(x0, s, _mm256_mul_ps(x1, c)));
    }
    for (; i < half; ++i) {
      const float x0 = x[i], x1 = x[i + half];
      x[i] = std::fma(x0, cos[i], -(x1 * sin[i]));
      x[i + half] = std::fma(x0, sin[i], x1 * cos[i]);
    }
  } else {
    for (; i + 4 <= half; i += 4) {
      const __m128 c4 = _mm_loadu_ps(cos + i), s4 = _mm_loadu_ps(sin + i);
      const __m256 c = _mm256_set_m128(_mm_unpackhi_ps(c4, c4), _mm_unpacklo_ps(c4, c4));
      const __m256 s = _mm256_set_m128(_mm_unpackhi_ps(s4, s4), _mm_unpacklo_ps(s4, s4));
      const __m256 v = _mm256_loadu_ps(x + 2 * i);                      // x0, x1, ...
      const __m256 sw = _mm256_permute_ps(v, 0xB1);                     // x1, x0, ...
      const __m256 even = _mm256_fmsub_ps(v, c, _mm256_mul_ps(sw, s));  // x0·c − x1·s
      const __m256 odd = _mm256_fmadd_ps(sw, s, _mm256_mul_ps(v, c));   // x0·s + x1·c
      _mm256_storeu_ps(x + 2 * i, _mm256_blend_ps(even, odd, 0xAA));
    }
    for (; i < half; ++i) {
      const float x0 = x[2 * i], x1 = x[2 * i + 1];
      x[2 * i] = std::fma(x0, cos[i], -(x1 * sin[i]));
      x[2 * i + 1] = std::fma(x0, sin[i], x1 * cos[i]);
    }
  }
}

namespace {}  // namespace

const OpsTable kOpsTable{Isa::kAvx2, rms_norm, softmax, silu,       swiglu_ggml, detail::gelu_by_table,
                         add,        mul,      scale,   f32_to_f16, f16_to_f32,  rope_rotate_ggml};

}  // namespace baton::kernels::avx2
