// AVX-512 (F/BW/VL/DQ) variants of the ops in ops.h (built with -march=x86-64-v4). Same
// reduction order as the scalar reference (see ops_scalar.cpp); exp is avx512::exp_ps, which
// gives the same bits as avx2::exp_ps. Tails use masked loads and stores. No inline library
// functions here (see ops_avx2.cpp).
#include <immintrin.h>

#include "kernels/ops_internal.h"
#include "kernels/ops_math_avx512.h"

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

void swiglu(const float* gate, const float* up, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : tail_mask(n - i);
    const __m512 g = silu_ps(_mm512_maskz_loadu_ps(m, gate + i));
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(g, _mm512_maskz_loadu_ps(m, up + i)));
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

void rope_rotate(const float* cache, float* x, int64_t n_rot, bool neox) {
  const int64_t half = n_rot / 2;
  const float* cos = cache;
  const float* sin = cache + half;
  if (neox) {
    for (int64_t i = 0; i < half; i += 16) {
      const __mmask16 m = half - i >= 16 ? __mmask16(0xFFFF) : tail_mask(half - i);
      const __m512 x0 = _mm512_maskz_loadu_ps(m, x + i), x1 = _mm512_maskz_loadu_ps(m, x + i + half);
      const __m512 c = _mm512_maskz_loadu_ps(m, cos + i), s = _mm512_maskz_loadu_ps(m, sin + i);
      _mm512_mask_storeu_ps(x + i, m, _mm512_sub_ps(_mm512_mul_ps(x0, c), _mm512_mul_ps(x1, s)));
      _mm512_mask_storeu_ps(x + i + half, m, _mm512_add_ps(_mm512_mul_ps(x0, s), _mm512_mul_ps(x1, c)));
    }
  } else {
    // 8 pairs (16 floats) per step; cos/sin duplicated into both lanes of each pair.
    const __m512i dup = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    const __m512 sign = _mm512_set_ps(1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1);
    for (int64_t i = 0; i < half; i += 8) {
      const int64_t pairs = half - i >= 8 ? 8 : half - i;
      const __mmask8 mh = static_cast<__mmask8>((1u << pairs) - 1);
      const __mmask16 m = static_cast<__mmask16>((1u << (2 * pairs)) - 1);
      const __m512 c = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_maskz_loadu_ps(mh, cos + i)));
      const __m512 s = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_maskz_loadu_ps(mh, sin + i)));
      const __m512 v = _mm512_maskz_loadu_ps(m, x + 2 * i);
      const __m512 swapped = _mm512_permute_ps(v, 0xB1);
      // even lanes x0·c − x1·s, odd lanes x1·c + x0·s (the sign flip is exact)
      const __m512 r = _mm512_add_ps(_mm512_mul_ps(v, c), _mm512_mul_ps(_mm512_mul_ps(swapped, s), sign));
      _mm512_mask_storeu_ps(x + 2 * i, m, r);
    }
  }
}

}  // namespace

const OpsTable kOpsTable{Isa::kAvx512, rms_norm, softmax,    silu,       swiglu,     detail::gelu_by_table, add,
                         mul,          scale,    f32_to_f16, f16_to_f32, rope_rotate};

}  // namespace baton::kernels::avx512
