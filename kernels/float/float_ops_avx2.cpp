// AVX2 + FMA + F16C kernels of F32, F16 and BF16 (IEEE binary32 / binary16 / bfloat16 element
// arrays, no blocks). Conversions and both gemm orders (float/float_gemm_simd.inc) are bit-identical to
// the scalar reference. Every (row, token) pair gets exactly its sequence of operations
// whatever tile it falls in, so results do not depend on n_rows or n_tok.
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "engine/base/fp16.h"

#include "kernels/float/kernels.h"

namespace baton::kernels::avx2 {
namespace {

// Lanes [0, n) all ones, for maskload.
__m256i lane_mask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

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
  static __m256 part(const uint8_t* p, int64_t i, int64_t n) { return _mm256_cvtph_ps(load_u16_part(p + 2 * i, n)); }
};

struct LoadBF16 {
  static __m256 widen(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
  static __m256 full(const uint8_t* p, int64_t i) {
    return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i)));
  }
  static __m256 part(const uint8_t* p, int64_t i, int64_t n) { return widen(load_u16_part(p + 2 * i, n)); }
};

constexpr int kTbDecodeRows = 8;  // tinyBLAS order, n_tok == 1: 8 rows
constexpr int kTbRows = 3;        // tinyBLAS order, n_tok > 1: 3 x 4 accumulators
constexpr int kTbToks = 4;
constexpr int kVdRows = 3;       // vec_dot order: 3 rows x 4 accumulators for one token,
constexpr int kVdRowsBatch = 1;  // 1 row x 2 tokens for several
constexpr int kVdToks = 2;

#include "kernels/float/float_gemm_simd.inc"

// Round to nearest even like the scalar reference; NaN becomes sign | 0x7E00 as there.
__m128i f32_to_f16x8(__m256 x) {
  const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256i sign = _mm256_srli_epi32(_mm256_and_si256(_mm256_castps_si256(x), _mm256_set1_epi32(INT32_MIN)), 16);
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
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i nan =
      _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(64));
  const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
  return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

template <class Convert>
void from_float(const float* src, uint8_t* p, int64_t n, Convert convert) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 2 * i), convert(_mm256_loadu_ps(src + i)));
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

#define BATON_FLOAT_GEMM(name, order, L)                                                                              \
  void name(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok, \
            float* out, size_t out_stride) {                                                                          \
    order<L>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);                                            \
  }
BATON_FLOAT_GEMM(gemm_f32, gemm_batch_order, Ld8F32)
BATON_FLOAT_GEMM(gemm_f16, gemm_batch_order, Ld8F16)
BATON_FLOAT_GEMM(gemm_bf16, gemm_batch_order, Ld8BF16)
BATON_FLOAT_GEMM(gemm_f32_single, gemm_single_order, Ld8F32)
BATON_FLOAT_GEMM(gemm_f16_single, gemm_single_order, Ld8F16)
BATON_FLOAT_GEMM(gemm_bf16_single, gemm_single_order, Ld8BF16)
#undef BATON_FLOAT_GEMM

}  // namespace baton::kernels::avx2
