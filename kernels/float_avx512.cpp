// AVX-512 (F/BW/VL/DQ) kernels of F32, F16 and BF16 (IEEE binary32 / binary16 / bfloat16
// element arrays, no blocks). Conversions are bit-identical to the scalar reference; a gemm
// dot product is one 16-lane f32 FMA chain over k (lane j sums elements j, j+16, ...; a masked
// tail), reduced in a fixed order. Every (row, token) pair gets exactly that sequence
// whatever tile it falls in, so results do not depend on n_rows or n_tok.
#include <immintrin.h>

#include <cstring>

#include "kernels/float_kernels.h"

namespace baton::kernels::avx512 {
namespace {

__mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

// Fixed-order horizontal sum (g++ 12's _mm512_reduce_add_ps trips -Wuninitialized).
float hsum(__m512 v) {
  const __m256 s8 =
      _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_maskz_extractf32x8_ps(0xFF, v, 1));
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_add_ss(s4, _mm_movehdup_ps(s4));
  return _mm_cvtss_f32(s4);
}

struct LoadF32 {
  static __m512 full(const uint8_t* p, int64_t i) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(p) + i);
  }
  static __m512 part(const uint8_t* p, int64_t i, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(p) + i);
  }
};

struct LoadF16 {
  static __m512 full(const uint8_t* p, int64_t i) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * i)));
  }
  static __m512 part(const uint8_t* p, int64_t i, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p + 2 * i));
  }
};

struct LoadBF16 {
  static __m512 widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static __m512 full(const uint8_t* p, int64_t i) {
    return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * i)));
  }
  static __m512 part(const uint8_t* p, int64_t i, __mmask16 m) {
    return widen(_mm256_maskz_loadu_epi16(m, p + 2 * i));
  }
};

// out[t][r] for an R x T tile; w and a point at the tile's first row / token.
template <class L, int R, int T>
void tile(int64_t k, const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride,
          float* out, size_t out_stride) {
  __m512 acc[R][T];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();

  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    __m512 wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = L::full(w + r * w_stride, i);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m512 av = L::full(a + t * a_stride, i);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], av, acc[r][t]);
    }
  }
  if (i < k) {
    const __mmask16 m = tail_mask(k - i);
    __m512 wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = L::part(w + r * w_stride, i, m);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m512 av = L::part(a + t * a_stride, i, m);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], av, acc[r][t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) out[t * out_stride + r] = hsum(acc[r][t]);
}

using TileFn = void (*)(int64_t, const uint8_t*, size_t, const uint8_t*, size_t, float*, size_t);

constexpr int kDecodeRows = 8;  // tile for n_tok == 1
constexpr int kRows = 4;        // tile for n_tok > 1: kRows x kToks accumulators
constexpr int kToks = 6;

template <class L, int R>
TileFn pick_toks(int64_t t) {
  switch (t) {
    case 1: return tile<L, R, 1>;
    case 2: if constexpr (R <= kRows) return tile<L, R, 2>; break;
    case 3: if constexpr (R <= kRows) return tile<L, R, 3>; break;
    case 4: if constexpr (R <= kRows) return tile<L, R, 4>; break;
    case 5: if constexpr (R <= kRows) return tile<L, R, 5>; break;
    case 6: if constexpr (R <= kRows) return tile<L, R, 6>; break;
  }
  return nullptr;
}

template <class L>
TileFn pick(int64_t r, int64_t t) {
  switch (r) {
    case 1: return pick_toks<L, 1>(t);
    case 2: return pick_toks<L, 2>(t);
    case 3: return pick_toks<L, 3>(t);
    case 4: return pick_toks<L, 4>(t);
    case 5: return pick_toks<L, 5>(t);
    case 6: return pick_toks<L, 6>(t);
    case 7: return pick_toks<L, 7>(t);
    case 8: return pick_toks<L, 8>(t);
  }
  return nullptr;
}

template <class L>
void gemm_float(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
                size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  const int64_t row_step = n_tok == 1 ? kDecodeRows : kRows;
  const int64_t tok_step = n_tok == 1 ? 1 : kToks;
  for (int64_t r0 = 0; r0 < n_rows; r0 += row_step) {
    const int64_t nr = n_rows - r0 < row_step ? n_rows - r0 : row_step;
    for (int64_t t0 = 0; t0 < n_tok; t0 += tok_step) {
      const int64_t nt = n_tok - t0 < tok_step ? n_tok - t0 : tok_step;
      pick<L>(nr, nt)(k, wb + r0 * w_stride, w_stride, ab + t0 * a_stride, a_stride,
                      out + t0 * out_stride + r0, out_stride);
    }
  }
}

}  // namespace

void f16_to_float(const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, LoadF16::full(p, i));
  if (i < n) _mm512_mask_storeu_ps(dst + i, tail_mask(n - i), LoadF16::part(p, i, tail_mask(n - i)));
}

void bf16_to_float(const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, LoadBF16::full(p, i));
  if (i < n)
    _mm512_mask_storeu_ps(dst + i, tail_mask(n - i), LoadBF16::part(p, i, tail_mask(n - i)));
}

namespace {
// Round to nearest even like the scalar reference; NaN becomes sign | 0x7E00 as there.
__m256i f32_to_f16x16(__m512 x) {
  const __m256i h = _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  const __m512i sign = _mm512_srli_epi32(_mm512_and_si512(_mm512_castps_si512(x),
                                                          _mm512_set1_epi32(INT32_MIN)), 16);
  const __m256i qnan = _mm512_cvtepi32_epi16(_mm512_or_si512(sign, _mm512_set1_epi32(0x7E00)));
  return _mm256_mask_blend_epi16(nan, h, qnan);
}

// Round to nearest even on the bit pattern; NaN is kept quiet: (u >> 16) | 64.
__m256i f32_to_bf16x16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(64));
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet));
}
}  // namespace

void float_to_f16(const float* src, void* dst, int64_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p + 2 * i), f32_to_f16x16(_mm512_loadu_ps(src + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm256_mask_storeu_epi16(p + 2 * i, m, f32_to_f16x16(_mm512_maskz_loadu_ps(m, src + i)));
  }
}

void float_to_bf16(const float* src, void* dst, int64_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p + 2 * i), f32_to_bf16x16(_mm512_loadu_ps(src + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm256_mask_storeu_epi16(p + 2 * i, m, f32_to_bf16x16(_mm512_maskz_loadu_ps(m, src + i)));
  }
}

void gemm_f32(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
              size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm_float<LoadF32>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_f16(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
              size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm_float<LoadF16>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_bf16(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm_float<LoadBF16>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

}  // namespace baton::kernels::avx512
