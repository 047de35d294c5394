// AVX-512 pieces shared by the K-quant gemm kernels (kquant_avx512.cpp, kquant_vnni_avx512.cpp):
// per-chunk scale vectors, Q8_K field loads and the 16-way horizontal reduction. Included only
// by files built for x86-64-v4; internal linkage keeps each file's copy its own.
#pragma once

#if !defined(__AVX512BW__)
#error "kquant_avx512.h needs AVX-512BW (include it from *_avx512.cpp only)"
#endif

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/blocks_k.h"
#include "kernels/kquant_unpack.h"

namespace baton::kernels::avx512 {
namespace {

// The int16 scale of each vpmaddubsw pair of 64-element chunk c: pair i covers elements 2i and
// 2i + 1 of the chunk, i.e. sub-block 4c + i / 8.
inline __m512i chunk_scales(const kq::Unpacked& u, int c) {
  static const __m512i kIndex[4] = {
      _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0),
      _mm512_set_epi16(7, 7, 7, 7, 7, 7, 7, 7, 6, 6, 6, 6, 6, 6, 6, 6, 5, 5, 5, 5, 5, 5, 5, 5, 4, 4, 4, 4, 4, 4, 4, 4),
      _mm512_set_epi16(11, 11, 11, 11, 11, 11, 11, 11, 10, 10, 10, 10, 10, 10, 10, 10, 9, 9, 9, 9, 9, 9, 9, 9, 8, 8, 8,
                       8, 8, 8, 8, 8),
      _mm512_set_epi16(15, 15, 15, 15, 15, 15, 15, 15, 14, 14, 14, 14, 14, 14, 14, 14, 13, 13, 13, 13, 13, 13, 13, 13,
                       12, 12, 12, 12, 12, 12, 12, 12),
  };
  const __m512i sc = _mm512_castsi256_si512(_mm256_load_si256(reinterpret_cast<const __m256i*>(u.sc)));
  return _mm512_permutexvar_epi16(kIndex[c], sc);
}

inline __m256i load_corr(const kq::Unpacked& u) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(u.corr)); }
inline __m256i load_bsums(const uint8_t* a_block) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a_block + offsetof(BlockQ8K, bsums)));
}
inline float a_scale(const uint8_t* a_block) {
  float d;
  std::memcpy(&d, a_block + offsetof(BlockQ8K, d), 4);
  return d;
}

// Stages 2-4 of the reduction: s1[i] holds the partial sums of x[2i] in its low 256 bits and
// of x[2i + 1] in its high 256 bits (8 lanes each); the result's lane 4q + j is the total of
// x[4j + q].
inline __m512i reduce_tail(const __m512i s1[8]) {
  __m512i s2[4];
  for (int i = 0; i < 4; ++i) {
    const __m512i a = s1[2 * i], b = s1[2 * i + 1];
    s2[i] = _mm512_add_epi32(_mm512_shuffle_i64x2(a, b, 0x88), _mm512_shuffle_i64x2(a, b, 0xDD));
  }
  __m512i s3[2];
  for (int i = 0; i < 2; ++i) {
    const __m512i a = s2[2 * i], b = s2[2 * i + 1];
    s3[i] = _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
  }
  const __m512 e = _mm512_castsi512_ps(s3[0]), f = _mm512_castsi512_ps(s3[1]);
  return _mm512_add_epi32(_mm512_castps_si512(_mm512_shuffle_ps(e, f, 0x88)),
                          _mm512_castps_si512(_mm512_shuffle_ps(e, f, 0xDD)));
}

// Lane i of the result = the sum of the 16 lanes of v[i].
inline __m512i reduce16(const __m512i v[16]) {
  __m512i s1[8];
  for (int i = 0; i < 8; ++i) {
    // Feed x[m] = v[(m % 4) * 4 + m / 4] so that lane 4q + j (= total of x[4j + q]) is v[4q + j].
    const __m512i a = v[((2 * i) % 4) * 4 + (2 * i) / 4], b = v[((2 * i + 1) % 4) * 4 + (2 * i + 1) / 4];
    s1[i] = _mm512_add_epi32(_mm512_shuffle_i64x2(a, b, 0x44), _mm512_shuffle_i64x2(a, b, 0xEE));
  }
  return reduce_tail(s1);
}

// Lane i of the result = the sum of the 8 lanes of v[i].
inline __m512i reduce16(const __m256i v[16]) {
  __m512i s1[8];
  for (int i = 0; i < 8; ++i) {
    const __m256i a = v[((2 * i) % 4) * 4 + (2 * i) / 4], b = v[((2 * i + 1) % 4) * 4 + (2 * i + 1) / 4];
    s1[i] = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
  }
  return reduce_tail(s1);
}

}  // namespace
}  // namespace baton::kernels::avx512
