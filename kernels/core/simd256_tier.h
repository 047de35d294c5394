// The two 256-bit integer tiers one AVX2 kernel body (*_simd256.inc) is built for; the namespace
// is BATON_KERNEL_NS, set by the per-ISA file kernels/CMakeLists.txt generates for the body:
//   avx2     x86-64-v3: int8 dot products by vpmaddubsw (+ vpmaddwd + vpaddd);
//   avxvnni  the same plus -mavxvnni and BATON_AVXVNNI: vpdpbusd / vpdpwssd (VEX encodings, the
//            12th-gen-and-later Intel laptops without AVX-512).
// The steps below are exact integer arithmetic in both forms, so both tiers give the same bits. The
// AVX2 forms need vpmaddubsw's int16 pair sums not to saturate: every caller states its bound.
#pragma once

#include <immintrin.h>

#if defined(BATON_AVXVNNI) && !defined(__AVXVNNI__)
#error "BATON_AVXVNNI is the AVX-VNNI tier: build with -mavxvnni"
#endif

namespace baton::kernels::dot256 {
namespace {  // NOLINT: one copy per ISA translation unit (different -march), never shared

#if defined(BATON_AVXVNNI)
inline constexpr bool kVnni = true;
#else
inline constexpr bool kVnni = false;
#endif

// acc + Σ of the 4 products u * s in each dword (u unsigned bytes, s signed bytes).
inline __m256i dpbusd(__m256i acc, __m256i u, __m256i s) {
#if defined(BATON_AVXVNNI)
  return _mm256_dpbusd_avx_epi32(acc, u, s);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

// acc + vpmaddwd(x, y): Σ of the 2 products of int16 words in each dword.
inline __m256i dpwssd(__m256i acc, __m256i x, __m256i y) {
#if defined(BATON_AVXVNNI)
  return _mm256_dpwssd_avx_epi32(acc, x, y);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(x, y));
#endif
}

}  // namespace
}  // namespace baton::kernels::dot256
