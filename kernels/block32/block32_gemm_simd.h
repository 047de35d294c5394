// Small SIMD helpers of the legacy-format gemms (block32/block32_gemm_llama.h, block32/q4_0_gemm.h):
// f16 scale loads, unaligned block loads, nibble and fifth-bit unpacking, the exact int32 lanes
// of a block dot product and llama.cpp's fixed 8-lane horizontal float sum.
// Internal linkage: each ISA translation unit (different -march) gets its own copy.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace baton::kernels {
namespace {  // NOLINT: one copy per ISA translation unit (different -march), never shared
namespace llama_order {

inline float half_to_float(const uint8_t* p) {
  uint16_t h;
  __builtin_memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

inline __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// 16 bytes at x in the low half, 16 bytes at y in the high half.
inline __m256i load2x16(const uint8_t* x, const uint8_t* y) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x))),
                                 _mm_loadu_si128(reinterpret_cast<const __m128i*>(y)), 1);
}
inline __m256i bcast16(const uint8_t* p) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// 16 bytes of nibbles -> 32 bytes: low nibbles (elements 0..15) then high nibbles (16..31).
inline __m256i denibble(const uint8_t* p) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_and_si256(_mm256_set1_epi8(15),
                          _mm256_inserti128_si256(_mm256_castsi128_si256(x), _mm_srli_epi16(x, 4), 1));
}

// bit j of qh -> byte j = 0x10 (set) or 0.
inline __m256i fifth_bits(const uint8_t* qh) {
  uint32_t bits;
  __builtin_memcpy(&bits, qh, 4);
  const __m256i shuffle =
      _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
  const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), shuffle);
  const __m256i bit = _mm256_set1_epi64x(0x8040201008040201);
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit), _mm256_set1_epi8(16));
}

// llama.cpp's hsum of 8 float lanes: ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)).
inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The 8 int32 lanes of unsigned u times signed s: exact sums of 4 products each (the products
// fit int16 pairs for the operands used here: |u| <= 128, |s| <= 128).
template <bool kVnni>
inline __m256i lanes_i32(__m256i u, __m256i s) {
  if constexpr (kVnni) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
  } else {
    return _mm256_madd_epi16(_mm256_set1_epi16(1), _mm256_maddubs_epi16(u, s));
  }
}

// The exact integer sum of the 8 lanes, as a float (|sum| < 2^24 for one block).
inline float hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
  return static_cast<float>(_mm_cvtsi128_si32(s));
}

}  // namespace llama_order
}  // namespace
}  // namespace baton::kernels
