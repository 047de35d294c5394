// Vector math for AVX2+FMA kernels: exp, the canonical 8-lane double sum, horizontal
// reductions. Include only from *_avx2.cpp files (everything here is in namespace avx2 and
// needs -march=x86-64-v3).
#pragma once

#include <immintrin.h>

namespace baton::kernels::avx2 {

// e^x for 8 floats, within ~2 ulp of expf over the whole range: x = n·ln2 + r with
// |r| <= ln2/2 (Cody–Waite split of ln2), e^r by its Taylor series to r^7 (error < 6e-9
// relative), then scaled by 2^n in two steps so that results down to the subnormals and up to
// +inf come out right. NaN propagates; -inf gives 0.
// ggml's AVX2 ggml_v_expf, lane for lane (defined in ops_avx2.cpp; scalar::ggml_v_expf1 is
// one lane of it).
__m256 ggml_v_expf(__m256 x);

inline __m256 exp_ps(__m256 x) {
  const __m256 log2e = _mm256_set1_ps(1.44269504088896341f);
  const __m256 ln2_hi = _mm256_set1_ps(0.693359375f);
  const __m256 ln2_lo = _mm256_set1_ps(-2.12194440e-4f);
  x = _mm256_max_ps(_mm256_set1_ps(-104.0f), x);  // operand order keeps NaN
  x = _mm256_min_ps(_mm256_set1_ps(89.0f), x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, ln2_hi, x);
  r = _mm256_fnmadd_ps(n, ln2_lo, r);
  __m256 p = _mm256_set1_ps(1.0f / 5040);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // 2^n = 2^(n/2) · 2^(n - n/2), each factor a normal float for n in [-150, 129].
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

inline float hmax_ps(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// Adds the 8 floats of v, widened to double, to the canonical 8 double lanes lo (0-3), hi (4-7).
inline void accumulate_pd(__m256 v, __m256d& lo, __m256d& hi) {
  lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
  hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

// Folds the canonical lanes as (j, j+4), (j, j+2), (0, 1).
inline double fold_pd(__m256d lo, __m256d hi) {
  const __m256d t = _mm256_add_pd(lo, hi);
  const __m128d u = _mm_add_pd(_mm256_castpd256_pd128(t), _mm256_extractf128_pd(t, 1));
  return _mm_cvtsd_f64(_mm_add_sd(u, _mm_unpackhi_pd(u, u)));
}

// Sum of 8 floats in a fixed tree ((j, j+4), (j, j+2), (0, 1)).
inline float hsum_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace baton::kernels::avx2
