// AVX-512 dequantization and activation quantization of the legacy block formats (layouts in
// block32/blocks.h). Bit-identical to the scalar reference: the same integer -> float
// conversions, a multiply and (for Q4_1/Q5_1) a separate add, never an FMA.
#include <immintrin.h>

#include "kernels/block32/blocks.h"
#include "kernels/block32/kernels.h"

namespace baton::kernels::avx512 {
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

// Elements 0..15 and 16..31 of a nibble block as int32.
void nibbles(const uint8_t* qs, __m512i& lo, __m512i& hi) {
  const __m128i q = load16(qs);
  const __m128i m = _mm_set1_epi8(0x0F);
  lo = _mm512_cvtepu8_epi32(_mm_and_si128(q, m));
  hi = _mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(q, 4), m));
}

void add_fifth_bits(const uint8_t* qh_bytes, __m512i& lo, __m512i& hi) {
  uint32_t qh;
  __builtin_memcpy(&qh, qh_bytes, 4);
  const __m512i bit = _mm512_set1_epi32(16);
  lo = _mm512_mask_add_epi32(lo, static_cast<__mmask16>(qh), lo, bit);
  hi = _mm512_mask_add_epi32(hi, static_cast<__mmask16>(qh >> 16), hi, bit);
}

void store_scaled(float* y, __m512i lo, __m512i hi, __m512 d) {
  _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_cvtepi32_ps(lo), d));
  _mm512_storeu_ps(y + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(hi), d));
}

void store_scaled_min(float* y, __m512i lo, __m512i hi, __m512 d, __m512 m) {
  _mm512_storeu_ps(y, _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(lo), d), m));
  _mm512_storeu_ps(y + 16, _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(hi), d), m));
}

void dequantize_q8(const uint8_t* x, size_t block_bytes, size_t qs_offset, float* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, x += block_bytes, y += kQK) {
    const __m512 d = _mm512_set1_ps(half(x));
    store_scaled(y, _mm512_cvtepi8_epi32(load16(x + qs_offset)), _mm512_cvtepi8_epi32(load16(x + qs_offset + 16)), d);
  }
}

// One block: q = round-half-even(x * 127/amax), saturated; returns d = amax/127 (unrounded).
float quantize_block(const float* x, int8_t* qs, int32_t* sum) {
  const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
  // max(|v|, acc) keeps acc when |v| is NaN, like the scalar std::max(acc, |v|)
  __m512 m = _mm512_max_ps(_mm512_abs_ps(v0), _mm512_setzero_ps());
  m = _mm512_max_ps(_mm512_abs_ps(v1), m);
  const float amax = _mm512_reduce_max_ps(m);
  const float d = amax / 127.0f;
  const __m512 id = _mm512_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const __m512i i0 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v0, id), kRound);
  const __m512i i1 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v1, id), kRound);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(qs), _mm512_cvtsepi32_epi8(i0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 16), _mm512_cvtsepi32_epi8(i1));
  if (sum) {  // of the stored (saturated) values
    *sum = _mm512_reduce_add_epi32(
        _mm512_add_epi32(_mm512_cvtepi8_epi32(load16(reinterpret_cast<const uint8_t*>(qs))),
                         _mm512_cvtepi8_epi32(load16(reinterpret_cast<const uint8_t*>(qs + 16)))));
  }
  return d;
}

}  // namespace

void dequantize_q4_0(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, x += sizeof(BlockQ4_0), y += kQK) {
    __m512i lo, hi;
    nibbles(x + 2, lo, hi);
    const __m512i eight = _mm512_set1_epi32(8);
    store_scaled(y, _mm512_sub_epi32(lo, eight), _mm512_sub_epi32(hi, eight), _mm512_set1_ps(half(x)));
  }
}

void dequantize_q4_1(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, x += sizeof(BlockQ4_1), y += kQK) {
    __m512i lo, hi;
    nibbles(x + 4, lo, hi);
    store_scaled_min(y, lo, hi, _mm512_set1_ps(half(x)), _mm512_set1_ps(half(x + 2)));
  }
}

void dequantize_q5_0(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, x += sizeof(BlockQ5_0), y += kQK) {
    __m512i lo, hi;
    nibbles(x + 6, lo, hi);
    add_fifth_bits(x + 2, lo, hi);
    const __m512i sixteen = _mm512_set1_epi32(16);
    store_scaled(y, _mm512_sub_epi32(lo, sixteen), _mm512_sub_epi32(hi, sixteen), _mm512_set1_ps(half(x)));
  }
}

void dequantize_q5_1(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, x += sizeof(BlockQ5_1), y += kQK) {
    __m512i lo, hi;
    nibbles(x + 8, lo, hi);
    add_fifth_bits(x + 4, lo, hi);
    store_scaled_min(y, lo, hi, _mm512_set1_ps(half(x)), _mm512_set1_ps(half(x + 2)));
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

}  // namespace baton::kernels::avx512
