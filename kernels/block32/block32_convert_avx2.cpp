// AVX2 + F16C dequantization and activation quantization of the legacy block formats
// (layouts in block32/blocks.h). Bit-identical to the scalar reference: the same integer ->
// float conversions, a multiply and (for Q4_1/Q5_1) a separate add, never an FMA.
#include <immintrin.h>

#include "kernels/block32/blocks.h"
#include "kernels/block32/kernels.h"

namespace baton::kernels::avx2 {
namespace {

float half(const uint8_t* p) {
  uint16_t h;
  __builtin_memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Round to nearest even like fp32_to_fp16 (which also makes every NaN sign | 0x7E00).
uint16_t to_half(float x) {
  if (x != x) return static_cast<uint16_t>((__builtin_signbit(x) ? 0x8000 : 0) | 0x7E00);
  return static_cast<uint16_t>(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

__m128i load16(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// 32 quants of one block as 4 x 8 int32 (elements 0-7, 8-15, 16-23, 24-31).
struct Quants {
  __m256i v[4];
};

Quants nibbles(const uint8_t* qs) {
  const __m128i q = load16(qs);
  const __m128i m = _mm_set1_epi8(0x0F);
  const __m128i lo = _mm_and_si128(q, m), hi = _mm_and_si128(_mm_srli_epi16(q, 4), m);
  return {{_mm256_cvtepu8_epi32(lo), _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)), _mm256_cvtepu8_epi32(hi),
           _mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8))}};
}

void add_fifth_bits(const uint8_t* qh_bytes, Quants& q) {
  uint32_t qh;
  __builtin_memcpy(&qh, qh_bytes, 4);
  const __m256i bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  for (int i = 0; i < 4; ++i) {
    const __m256i sel = _mm256_and_si256(_mm256_set1_epi32(static_cast<int>(qh >> (8 * i))), bits);
    const __m256i set = _mm256_cmpeq_epi32(sel, bits);
    q.v[i] = _mm256_add_epi32(q.v[i], _mm256_and_si256(set, _mm256_set1_epi32(16)));
  }
}

void store_scaled(float* y, const Quants& q, int zero, float d) {
  const __m256 vd = _mm256_set1_ps(d);
  for (int i = 0; i < 4; ++i) {
    const __m256 x = _mm256_cvtepi32_ps(_mm256_sub_epi32(q.v[i], _mm256_set1_epi32(zero)));
    _mm256_storeu_ps(y + 8 * i, _mm256_mul_ps(x, vd));
  }
}

void store_scaled_min(float* y, const Quants& q, float d, float m) {
  const __m256 vd = _mm256_set1_ps(d), vm = _mm256_set1_ps(m);
  for (int i = 0; i < 4; ++i)
    _mm256_storeu_ps(y + 8 * i, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q.v[i]), vd), vm));
}

void dequantize_q8(const uint8_t* x, size_t block_bytes, size_t qs_offset, float* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, x += block_bytes, y += kQK) {
    const __m128i a = load16(x + qs_offset), b = load16(x + qs_offset + 16);
    const Quants q = {{_mm256_cvtepi8_epi32(a), _mm256_cvtepi8_epi32(_mm_srli_si128(a, 8)), _mm256_cvtepi8_epi32(b),
                       _mm256_cvtepi8_epi32(_mm_srli_si128(b, 8))}};
    store_scaled(y, q, 0, half(x));
  }
}

float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// One block: q = round-half-even(x * 127/amax), saturated; returns d = amax/127 (unrounded).
float quantize_block(const float* x, int8_t* qs, int32_t* sum) {
  __m256 v[4];
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    m = _mm256_max_ps(_mm256_andnot_ps(sign, v[i]), m);  // keeps m when |v| is NaN
  }
  const float amax = hmax(m);
  const float d = amax / 127.0f;
  const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
  __m256i q[4];
  for (int i = 0; i < 4; ++i)
    q[i] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[i], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  const __m256i q01 = _mm256_packs_epi32(q[0], q[1]), q23 = _mm256_packs_epi32(q[2], q[3]);
  const __m256i bytes =
      _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q01, q23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), bytes);
  if (sum) {  // of the stored (saturated) values
    const __m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), bytes);
    const __m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    *sum = _mm_cvtsi128_si32(s);
  }
  return d;
}

}  // namespace

void dequantize_q4_0(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, x += sizeof(BlockQ4_0), y += kQK) store_scaled(y, nibbles(x + 2), 8, half(x));
}

void dequantize_q4_1(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, x += sizeof(BlockQ4_1), y += kQK)
    store_scaled_min(y, nibbles(x + 4), half(x), half(x + 2));
}

void dequantize_q5_0(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, x += sizeof(BlockQ5_0), y += kQK) {
    Quants q = nibbles(x + 6);
    add_fifth_bits(x + 2, q);
    store_scaled(y, q, 16, half(x));
  }
}

void dequantize_q5_1(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, x += sizeof(BlockQ5_1), y += kQK) {
    Quants q = nibbles(x + 8);
    add_fifth_bits(x + 4, q);
    store_scaled_min(y, q, half(x), half(x + 2));
  }
}

void dequantize_q8_0(const void* src, float* y, int64_t n) {
  dequantize_q8(static_cast<const uint8_t*>(src), sizeof(BlockQ8_0), 2, y, n);
}

void dequantize_q8_1(const void* src, float* y, int64_t n) {
  dequantize_q8(static_cast<const uint8_t*>(src), sizeof(BlockQ8_1), 4, y, n);
}

void quantize_q8_0(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK, y += sizeof(BlockQ8_0)) {
    const uint16_t d = to_half(quantize_block(x, reinterpret_cast<int8_t*>(y + 2), nullptr));
    __builtin_memcpy(y, &d, 2);
  }
}

void quantize_q8_1(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK, y += sizeof(BlockQ8_1)) {
    int32_t sum = 0;
    const float d = quantize_block(x, reinterpret_cast<int8_t*>(y + 4), &sum);
    const uint16_t h[2] = {to_half(d), to_half(d * static_cast<float>(sum))};
    __builtin_memcpy(y, h, 4);
  }
}

}  // namespace baton::kernels::avx2
