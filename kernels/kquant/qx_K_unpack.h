// One K-quant super-block unpacked into a format-independent shape that the SIMD gemm and
// dequantization kernels consume. Written with AVX2 intrinsics; included only by files built
// for x86-64-v3 or higher (kquant/*_avx2.cpp, kquant/*_avx512.cpp). Everything here has
// internal linkage, so each ISA's copy stays its own.
//
// For element e and sub-block s = e / 16 of a super-block:
//   kMins formats (Q2_K Q4_K Q5_K):  x = (d * sc[s]) * q[e] - dmin * corr[s]
//   kOffset formats (Q3_K Q6_K):     x = (d * sc[s]) * (q[e] - kOffset),  corr[s] = -kOffset * sc[s]
// so that sum_e x * a = d * (sum_s sc[s] * sum q * a + ...) with the bsums terms from corr.
#pragma once

#if !defined(__AVX2__)
#error "kquant/qx_K_unpack.h needs AVX2 (include it from *_avx2.cpp / *_avx512.cpp only)"
#endif

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/kquant/blocks.h"

namespace baton::kernels::kq {
namespace {

enum class Kind { kMins, kOffset };

struct alignas(64) Unpacked {
  uint8_t q[kQK_K];  // unsigned quant per element, 0..63
  int16_t sc[16];    // scale per 16-element sub-block
  int16_t corr[16];  // per sub-block: min (kMins) or -kOffset * sc (kOffset); multiplies bsums
  float d;
  float dmin;  // 0 for kOffset formats
};

inline float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

inline __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline void store32(void* p, __m256i v) { _mm256_store_si256(reinterpret_cast<__m256i*>(p), v); }
inline int32_t load_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// 0x10 (or `bit_value`) in every byte whose `mask` bit is set in `bits`.
inline __m256i bit_to_byte(__m256i bits, uint8_t mask, uint8_t bit_value) {
  const __m256i m = _mm256_set1_epi8(static_cast<char>(mask));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(bits, m), m);
  return _mm256_and_si256(set, _mm256_set1_epi8(static_cast<char>(bit_value)));
}

// Q4_K / Q5_K: 8 scales and 8 mins from the 12 packed bytes (bytes 0..7 scales, 8..15 mins).
inline __m128i scales_mins_k4(const uint8_t* packed) {
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  uint32_t u[4];
  std::memcpy(u, packed, 12);
  u[3] = ((u[2] >> 4) & kLow4) | (((u[1] >> 6) & kLow2) << 4);
  const uint32_t mins_low = u[1] & kLow6;
  u[1] = (u[2] & kLow4) | (((u[0] >> 6) & kLow2) << 4);
  u[2] = mins_low;
  u[0] &= kLow6;
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(u));
}

// Scales and mins of 32-element sub-blocks, duplicated to the 16-element granularity.
inline void store_scales_mins_k4(const uint8_t* packed, Unpacked& u) {
  const __m128i sm = scales_mins_k4(packed);
  store32(u.sc, _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(sm, sm)));
  store32(u.corr, _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm)));
}

struct FmtQ4K {
  static constexpr int kScaleElems = 32;  // elements per distinct scale
  static constexpr size_t kBytes = sizeof(BlockQ4K);
  static constexpr Kind kKind = Kind::kMins;
  static constexpr int kOffset = 0;
  static void unpack(const uint8_t* x, Unpacked& u) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int c = 0; c < 4; ++c) {
      const __m256i v = load32(x + offsetof(BlockQ4K, qs) + 32 * c);
      store32(u.q + 64 * c, _mm256_and_si256(v, low4));
      store32(u.q + 64 * c + 32, _mm256_and_si256(_mm256_srli_epi16(v, 4), low4));
    }
    store_scales_mins_k4(x + offsetof(BlockQ4K, scales), u);
    u.d = f16_at(x + offsetof(BlockQ4K, d));
    u.dmin = f16_at(x + offsetof(BlockQ4K, dmin));
  }
};

struct FmtQ5K {
  static constexpr int kScaleElems = 32;  // elements per distinct scale
  static constexpr size_t kBytes = sizeof(BlockQ5K);
  static constexpr Kind kKind = Kind::kMins;
  static constexpr int kOffset = 0;
  static void unpack(const uint8_t* x, Unpacked& u) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i qh = load32(x + offsetof(BlockQ5K, qh));
    for (int c = 0; c < 4; ++c) {
      const __m256i v = load32(x + offsetof(BlockQ5K, qs) + 32 * c);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(v, low4), bit_to_byte(qh, uint8_t(1u << (2 * c)), 0x10));
      const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), low4),
                                         bit_to_byte(qh, uint8_t(2u << (2 * c)), 0x10));
      store32(u.q + 64 * c, lo);
      store32(u.q + 64 * c + 32, hi);
    }
    store_scales_mins_k4(x + offsetof(BlockQ5K, scales), u);
    u.d = f16_at(x + offsetof(BlockQ5K, d));
    u.dmin = f16_at(x + offsetof(BlockQ5K, dmin));
  }
};

struct FmtQ6K {
  static constexpr int kScaleElems = 16;  // elements per distinct scale
  static constexpr size_t kBytes = sizeof(BlockQ6K);
  static constexpr Kind kKind = Kind::kOffset;
  static constexpr int kOffset = 32;
  static void unpack(const uint8_t* x, Unpacked& u) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = load32(x + offsetof(BlockQ6K, ql) + 64 * h);
      const __m256i ql1 = load32(x + offsetof(BlockQ6K, ql) + 64 * h + 32);
      const __m256i qh = load32(x + offsetof(BlockQ6K, qh) + 32 * h);
      // 16-bit shifts move bits across bytes; the 0x30 mask keeps only the wanted pair.
      const __m256i h0 = _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45);
      const __m256i h1 = _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45);
      const __m256i h2 = _mm256_and_si256(qh, bits45);
      const __m256i h3 = _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45);
      uint8_t* q = u.q + 128 * h;
      store32(q, _mm256_or_si256(_mm256_and_si256(ql0, low4), h0));
      store32(q + 32, _mm256_or_si256(_mm256_and_si256(ql1, low4), h1));
      store32(q + 64, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4), h2));
      store32(q + 96, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4), h3));
    }
    const __m256i sc =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + offsetof(BlockQ6K, scales))));
    store32(u.sc, sc);
    store32(u.corr, _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc, 5)));
    u.d = f16_at(x + offsetof(BlockQ6K, d));
    u.dmin = 0.0f;
  }
};

// The 2-bit fields shared by Q2_K and Q3_K: element 128h + 32j + l is bits 2j of qs[32h + l].
inline __m256i two_bit_field(__m256i q32, int j) {
  return _mm256_and_si256(_mm256_srl_epi16(q32, _mm_cvtsi32_si128(2 * j)), _mm256_set1_epi8(3));
}

struct FmtQ3K {
  static constexpr int kScaleElems = 16;  // elements per distinct scale
  static constexpr size_t kBytes = sizeof(BlockQ3K);
  static constexpr Kind kKind = Kind::kOffset;
  static constexpr int kOffset = 4;
  static void unpack(const uint8_t* x, Unpacked& u) {
    const __m256i hmask = load32(x + offsetof(BlockQ3K, hmask));
    for (int h = 0; h < 2; ++h) {
      const __m256i q32 = load32(x + offsetof(BlockQ3K, qs) + 32 * h);
      for (int j = 0; j < 4; ++j)
        store32(u.q + 128 * h + 32 * j,
                _mm256_or_si256(two_bit_field(q32, j), bit_to_byte(hmask, uint8_t(1u << (4 * h + j)), 0x04)));
    }
    // The 16 6-bit scales: low nibbles from bytes 0..7, high pairs from bytes 8..11.
    constexpr uint32_t kLow2 = 0x03030303, kLow4 = 0x0f0f0f0f;
    uint32_t a[4];
    std::memcpy(a, x + offsetof(BlockQ3K, scales), 12);
    const uint32_t high = a[2];
    a[2] = ((a[0] >> 4) & kLow4) | (((high >> 4) & kLow2) << 4);
    a[3] = ((a[1] >> 4) & kLow4) | (((high >> 6) & kLow2) << 4);
    a[0] = (a[0] & kLow4) | (((high >> 0) & kLow2) << 4);
    a[1] = (a[1] & kLow4) | (((high >> 2) & kLow2) << 4);
    const __m256i sc = _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
                                        _mm256_set1_epi16(32));
    store32(u.sc, sc);
    store32(u.corr, _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc, 2)));
    u.d = f16_at(x + offsetof(BlockQ3K, d));
    u.dmin = 0.0f;
  }
};

struct FmtQ2K {
  static constexpr int kScaleElems = 16;  // elements per distinct scale
  static constexpr size_t kBytes = sizeof(BlockQ2K);
  static constexpr Kind kKind = Kind::kMins;
  static constexpr int kOffset = 0;
  static void unpack(const uint8_t* x, Unpacked& u) {
    for (int h = 0; h < 2; ++h) {
      const __m256i q32 = load32(x + offsetof(BlockQ2K, qs) + 32 * h);
      for (int j = 0; j < 4; ++j) store32(u.q + 128 * h + 32 * j, two_bit_field(q32, j));
    }
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + offsetof(BlockQ2K, scales)));
    const __m128i low4 = _mm_set1_epi8(0x0F);
    store32(u.sc, _mm256_cvtepu8_epi16(_mm_and_si128(packed, low4)));
    store32(u.corr, _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), low4)));
    u.d = f16_at(x + offsetof(BlockQ2K, d));
    u.dmin = f16_at(x + offsetof(BlockQ2K, dmin));
  }
};

}  // namespace
}  // namespace baton::kernels::kq
