// AVX-512 (F/BW/VL/DQ) variants of the ops in ops.h (built with -march=x86-64-v4). Same
// reduction order as the scalar reference (see ops_scalar.cpp); exp is avx512::exp_ps, which
// gives the same bits as avx2::exp_ps. Tails use masked loads and stores. No inline library
// functions here (see ops_avx2.cpp).
#include <immintrin.h>

#include "kernels/ops/ops_internal.h"
#include "kernels/ops/ops_math_avx512.h"

namespace baton::kernels::avx512 {
namespace {

__mmask16 tail_mask(int64_t rem) { return static_cast<__mmask16>((1u << rem) - 1); }

void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  const int64_t n8 = n / 8 * 8;
  __m512d acc = _mm512_setzero_pd();
  for (int64_t i = 0; i < n8; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    accumulate_pd(_mm256_mul_ps(v, v), acc);
  }
  double sum = fold_pd(acc);
  for (int64_t i = n8; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float s = 1.0f / __builtin_sqrtf(mean + eps);
  const __m512 vs = _mm512_set1_ps(s);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : tail_mask(n - i);
    __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vs);
    if (weight) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, weight + i));
    _mm512_mask_storeu_ps(y + i, m, v);
  }
}

void softmax(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  __m512 vmax = _mm512_set1_ps(-__builtin_inff());
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : tail_mask(n - i);
    vmax = _mm512_mask_max_ps(vmax, m, vmax, _mm512_maskz_loadu_ps(m, x + i));
  }
  const float max = _mm512_reduce_max_ps(vmax);

  const __m512 vm = _mm512_set1_ps(max);
  const int64_t n8 = n / 8 * 8;
  __m512d acc = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : tail_mask(n - i);
    const __m512 e = exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vm));
    _mm512_mask_storeu_ps(y + i, m, e);
    // The canonical double sum takes whole groups of 8 only; the tail is added in order below.
    if (i + 8 <= n8) accumulate_pd(_mm512_castps512_ps256(e), acc);
    if (i + 16 <= n8) accumulate_pd(_mm512_extractf32x8_ps(e, 1), acc);
  }
  double sum = fold_pd(acc);
  for (int64_t i = n8; i < n; ++i) sum += static_cast<double>(y[i]);
  const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / sum));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + i), inv));
  }
}

__m512 silu_ps(__m512 v) {
  const __m512 neg = _mm512_xor_ps(v, _mm512_set1_ps(-0.0f));
  return _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), exp_ps(neg)));
}

void silu(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, silu_ps(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

void add(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

void mul(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

void scale(const float* x, float s, float* y, int64_t n) {
  const __m512 vs = _mm512_set1_ps(s);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vs));
  }
}

void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : tail_mask(n - i);
    const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_mask_storeu_epi16(y + i, m, h);
  }
}

void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i)));
  }
}

}  // namespace

const OpsTable kOpsTable{Isa::kAvx512, rms_norm, softmax, silu,       avx2::swiglu_ggml, detail::gelu_by_table,
                         add,          mul,      scale,   f32_to_f16, f16_to_f32,        avx2::rope_rotate_ggml};

}  // namespace baton::kernels::avx512
