// AVX2 + FMA + F16C kernels of F32, F16 and BF16 (IEEE binary32 / binary16 / bfloat16 element
// arrays, no blocks). Conversions are bit-identical to the scalar reference; a gemm dot product
// is one 8-lane f32 FMA chain over k (lane j sums elements j, j+8, ...; a zero-padded tail),
// reduced in a fixed order. Every (row, token) pair gets exactly that sequence whatever tile
// it falls in, so results do not depend on n_rows or n_tok.
#include <immintrin.h>

#include <cstring>

#include "kernels/float_kernels.h"

namespace baton::kernels::avx2 {
namespace {

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Lanes [0, n) all ones, for maskload.
__m256i lane_mask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

struct LoadF32 {
  static __m256 full(const uint8_t* p, int64_t i) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p) + i);
  }
  static __m256 part(const uint8_t* p, int64_t i, int64_t n) {
    return _mm256_maskload_ps(reinterpret_cast<const float*>(p) + i, lane_mask(n));
  }
};

// 16-bit formats: the tail is copied into a zeroed buffer (AVX2 has no 16-bit masked load).
__m128i load_u16_part(const uint8_t* p, int64_t n) {
  uint16_t buf[8] = {};
  std::memcpy(buf, p, static_cast<size_t>(n) * 2);
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(buf));
}

struct LoadF16 {
  static __m256 full(const uint8_t* p, int64_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i)));
  }
  static __m256 part(const uint8_t* p, int64_t i, int64_t n) {
    return _mm256_cvtph_ps(load_u16_part(p + 2 * i, n));
  }
};

struct LoadBF16 {
  static __m256 widen(__m128i h) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static __m256 full(const uint8_t* p, int64_t i) {
    return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i)));
  }
  static __m256 part(const uint8_t* p, int64_t i, int64_t n) {
    return widen(load_u16_part(p + 2 * i, n));
  }
};

template <class L, int R, int T>
void tile(int64_t k, const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride,
          float* out, size_t out_stride) {
  __m256 acc[R][T];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();

  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    __m256 wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = L::full(w + r * w_stride, i);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m256 av = L::full(a + t * a_stride, i);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], av, acc[r][t]);
    }
  }
  if (i < k) {
    __m256 wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = L::part(w + r * w_stride, i, k - i);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m256 av = L::part(a + t * a_stride, i, k - i);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], av, acc[r][t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) out[t * out_stride + r] = hsum(acc[r][t]);
}

using TileFn = void (*)(int64_t, const uint8_t*, size_t, const uint8_t*, size_t, float*, size_t);

constexpr int kDecodeRows = 8;  // tile for n_tok == 1
constexpr int kRows = 3;        // tile for n_tok > 1: kRows x kToks accumulators
constexpr int kToks = 4;

template <class L, int R>
TileFn pick_toks(int64_t t) {
  switch (t) {
    case 1: return tile<L, R, 1>;
    case 2: if constexpr (R <= kRows) return tile<L, R, 2>; break;
    case 3: if constexpr (R <= kRows) return tile<L, R, 3>; break;
    case 4: if constexpr (R <= kRows) return tile<L, R, 4>; break;
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

// Round to nearest even like the scalar reference; NaN becomes sign | 0x7E00 as there.
__m128i f32_to_f16x8(__m256 x) {
  const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256i sign = _mm256_srli_epi32(
      _mm256_and_si256(_mm256_castps_si256(x), _mm256_set1_epi32(INT32_MIN)), 16);
  const __m256i q32 = _mm256_or_si256(sign, _mm256_set1_epi32(0x7E00));
  const __m128i qnan = _mm_packus_epi32(_mm256_castsi256_si128(q32), _mm256_extracti128_si256(q32, 1));
  const __m256i nan32 = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  const __m128i nan = _mm_packs_epi32(_mm256_castsi256_si128(nan32), _mm256_extracti128_si256(nan32, 1));
  return _mm_blendv_epi8(h, qnan, nan);
}

// Round to nearest even on the bit pattern; NaN is kept quiet: (u >> 16) | 64.
__m128i f32_to_bf16x8(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                         _mm256_set1_epi32(0x7f800000));
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(64));
  const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
  return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

template <class Convert>
void from_float(const float* src, uint8_t* p, int64_t n, Convert convert) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 2 * i), convert(_mm256_loadu_ps(src + i)));
  if (i < n) {
    const __m128i h = convert(_mm256_maskload_ps(src + i, lane_mask(n - i)));
    uint16_t buf[8];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(buf), h);
    std::memcpy(p + 2 * i, buf, static_cast<size_t>(n - i) * 2);
  }
}

template <class L>
void to_float(const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, L::full(p, i));
  if (i < n) _mm256_maskstore_ps(dst + i, lane_mask(n - i), L::part(p, i, n - i));
}

}  // namespace

void f16_to_float(const void* src, float* dst, int64_t n) { to_float<LoadF16>(src, dst, n); }
void bf16_to_float(const void* src, float* dst, int64_t n) { to_float<LoadBF16>(src, dst, n); }

void float_to_f16(const float* src, void* dst, int64_t n) {
  from_float(src, static_cast<uint8_t*>(dst), n, f32_to_f16x8);
}
void float_to_bf16(const float* src, void* dst, int64_t n) {
  from_float(src, static_cast<uint8_t*>(dst), n, f32_to_bf16x8);
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

}  // namespace baton::kernels::avx2
