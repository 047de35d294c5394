// AVX-512 (F/BW/VL/DQ) kernels of F32, F16 and BF16 (IEEE binary32 / binary16 / bfloat16
// element arrays, no blocks). Conversions are bit-identical to the scalar reference; the
// gemms are float/float_gemm_simd.inc's 8-lane code (llama.cpp's AVX2 orders, see float/kernels.h) with
// larger register tiles (32 vector registers), so bitwise equal to the scalar reference too.
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "engine/base/fp16.h"

#include "kernels/float/kernels.h"

namespace baton::kernels::avx512 {
namespace {

__mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

struct LoadF16 {
  static __m512 full(const uint8_t* p, int64_t i) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * i)));
  }
  static __m512 part(const uint8_t* p, int64_t i, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p + 2 * i));
  }
};

struct LoadBF16 {
  static __m512 widen(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
  static __m512 full(const uint8_t* p, int64_t i) {
    return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * i)));
  }
  static __m512 part(const uint8_t* p, int64_t i, __mmask16 m) { return widen(_mm256_maskz_loadu_epi16(m, p + 2 * i)); }
};

constexpr int kTbDecodeRows = 8;  // tinyBLAS order, n_tok == 1: 8 rows
constexpr int kTbRows = 4;        // tinyBLAS order, n_tok > 1: 4 x 6 accumulators (ymm0-31)
constexpr int kTbToks = 6;
constexpr int kVdRows = 3;       // vec_dot order: 3 rows x 4 accumulators for one token (6 measured slower),
constexpr int kVdRowsBatch = 3;  // 3 rows x 2 tokens for several
constexpr int kVdToks = 2;

#include "kernels/float/float_gemm_simd.inc"

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
  if (i < n) _mm512_mask_storeu_ps(dst + i, tail_mask(n - i), LoadBF16::part(p, i, tail_mask(n - i)));
}

namespace {
// Round to nearest even like the scalar reference; NaN becomes sign | 0x7E00 as there.
__m256i f32_to_f16x16(__m512 x) {
  const __m256i h = _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  const __m512i sign = _mm512_srli_epi32(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN)), 16);
  const __m256i qnan = _mm512_cvtepi32_epi16(_mm512_or_si512(sign, _mm512_set1_epi32(0x7E00)));
  return _mm256_mask_blend_epi16(nan, h, qnan);
}

// Round to nearest even on the bit pattern; NaN is kept quiet: (u >> 16) | 64.
__m256i f32_to_bf16x16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __mmask16 nan =
      _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
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

}  // namespace baton::kernels::avx512
