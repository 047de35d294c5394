// The Q4_0 gemm on weights repacked at load into groups of 16 rows (repack_q4_0_x16,
// block32/q4_0_repack_x16.cpp), in llama.cpp's AVX2 repack order like block32/q4_0_gemm.h: one float
// chain per output, acc = fma(float(block integer sum), d_w * d_a, acc) over the blocks in order.
//
// Layout of one group (16 rows of nb blocks; the same 16 * nb * 18 bytes as the plain rows),
// block i at 288 i:
//   [0, 32)      d: row j's f16 scale at 2 j
//   [32, 288)    quants: chunk c (0..3) at 32 + 64 c, row j at + 4 j: bytes 4c .. 4c+3 of row j's
//                qs (low nibbles = elements 4c..4c+3, high nibbles = elements 16+4c .. 16+4c+3)
// So int32 lane j of a chunk holds 4 bytes of row j: one dpbusd (or maddubs) against the
// broadcast 4 activation bytes adds 4 products of row j to lane j, and the block's 8 dot
// steps leave lane j = Σ n a over the block (n the raw nibble) without any transpose; the
// exact sum Σ (n - 8) a is that plus bias = -8 Σ a (Q4Act). Integer sums are exact in any
// order, so each output is bitwise the plain kernel's (and the scalar reference's).
// A group is one sequential stream, which the hardware prefetchers follow (a separate scale
// stream or software prefetching measured slower: docs/BENCHMARKS.md, Kernel notes).
//
// Without VNNI the 8 maddubs results are summed in int16: each is a pair of products
// (|n a| <= 15 * 128), 16 products per int16 lane: |sum| <= 30720, exact. With VNNI (AVX512-VNNI,
// or the AVX-VNNI tier's q4_0_x16_group_dpbusd) dpbusd adds them to int32 lanes that start at bias.
// Included by block32_gemm_{avx2,avx512,avx512vnni}.cpp; internal linkage per ISA.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/block32/blocks.h"
#include "kernels/block32/q4_0_gemm.h"

namespace baton::kernels {
namespace {  // NOLINT: one copy per ISA translation unit (different -march), never shared
namespace llama_order {

constexpr int64_t kX16Rows = 16;

inline int32_t load_i32(const uint8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

#ifdef __AVX512F__
// One group (16 rows) x T tokens; acc lane j = row j.
template <bool kVnni, int T>
void q4_0_x16_group(int64_t nb, const uint8_t* g, const uint8_t* a, size_t a_stride, const Q4Act* info, float* out,
                    size_t out_stride) {
  const __m512i m15 = _mm512_set1_epi8(15);
  __m512 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* db = g + i * 288;
    const uint8_t* qb = db + 32;
    __m512i lo[4], hi[4];
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m512i v = _mm512_loadu_si512(qb + 64 * c);
      lo[c] = _mm512_and_si512(v, m15);
      hi[c] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m15);
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(db)));
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const uint8_t* aq = a + t * a_stride + i * sizeof(BlockQ8_0) + 2;
      const Q4Act& ai = info[t * nb + i];
      __m512i sum;
      if constexpr (kVnni) {
        __m512i s0 = _mm512_set1_epi32(ai.bias), s1 = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
          s0 = _mm512_dpbusd_epi32(s0, lo[c], _mm512_set1_epi32(load_i32(aq + 4 * c)));
          s1 = _mm512_dpbusd_epi32(s1, hi[c], _mm512_set1_epi32(load_i32(aq + 16 + 4 * c)));
        }
        sum = _mm512_add_epi32(s0, s1);
      } else {
        __m512i p = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
          p = _mm512_add_epi16(p, _mm512_maddubs_epi16(lo[c], _mm512_set1_epi32(load_i32(aq + 4 * c))));
          p = _mm512_add_epi16(p, _mm512_maddubs_epi16(hi[c], _mm512_set1_epi32(load_i32(aq + 16 + 4 * c))));
        }
        sum = _mm512_add_epi32(_mm512_madd_epi16(p, _mm512_set1_epi16(1)), _mm512_set1_epi32(ai.bias));
      }
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, _mm512_set1_ps(ai.d)), acc[t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(out + t * out_stride, acc[t]);
}
#else
// The AVX-VNNI tier's form of the group below, x T <= 4 tokens: vpdpbusd, the multiply pipes'
// only other work besides the scale mul + fma, runs at 2 a cycle on 2 pipes, so the 4 x 2 int32
// chains (each 8 deep, fed by both halves' nibbles held for the chunk) leave the float
// accumulators to L1, one load and store per block each. Two tokens (the AVX2 shape) ran
// ~7 % slower: the 16 weight ands / shifts per block then share the vector pipes with half as
// many dot products (docs/BENCHMARKS.md, Kernel notes).
template <int T>
void q4_0_x16_group_dpbusd(int64_t nb, const uint8_t* g, const uint8_t* a, size_t a_stride, const Q4Act* info,
                           float* out, size_t out_stride) {
  const __m256i m15 = _mm256_set1_epi8(15);
  __m256 acc[2][T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* db = g + i * 288;
    const uint8_t* qb = db + 32;
    __m256i p[2][T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) p[0][t] = p[1][t] = _mm256_set1_epi32(info[t * nb + i].bias);
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      __m256i lo[2], hi[2];
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb + 64 * c + 32 * h));
        lo[h] = _mm256_and_si256(v, m15);
        hi[h] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m15);
      }
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const uint8_t* aq = a + t * a_stride + i * sizeof(BlockQ8_0) + 2;
        // Empty (no instruction): the broadcasts are loaded where used, not all at once.
        __asm__("" : "+r"(aq) : "x"(p[0][t]));
        const __m256i alo = _mm256_set1_epi32(load_i32(aq + 4 * c));
        const __m256i ahi = _mm256_set1_epi32(load_i32(aq + 16 + 4 * c));
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          p[h][t] = _mm256_dpbusd_avx_epi32(p[h][t], lo[h], alo);
          p[h][t] = _mm256_dpbusd_avx_epi32(p[h][t], hi[h], ahi);
        }
      }
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(db + 16 * h)));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t)
        acc[h][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p[h][t]), _mm256_mul_ps(dw, _mm256_set1_ps(info[t * nb + i].d)),
                                    acc[h][t]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
    _mm256_storeu_ps(out + t * out_stride, acc[0][t]);
    _mm256_storeu_ps(out + t * out_stride + 8, acc[1][t]);
  }
}

// One group (16 rows) x T tokens as two 8-row halves (the AVX2 tier); acc[h][t] lane j = row 8h + j.
// The chunk loop is outermost with both halves inside it: each activation broadcast is loaded once
// per block and, with T <= 2, everything stays in the 16 ymm registers (half-outer spilled the
// accumulators and broadcasts to the stack).
template <bool kVnni, int T>
void q4_0_x16_group(int64_t nb, const uint8_t* g, const uint8_t* a, size_t a_stride, const Q4Act* info, float* out,
                    size_t out_stride) {
  static_assert(T <= 2, "register budget: T <= 2 (kQ4Toks)");
  static_assert(!kVnni, "the AVX-VNNI tier takes q4_0_x16_group_dpbusd");
  const __m256i m15 = _mm256_set1_epi8(15);
  __m256 acc[2][T];
#pragma GCC unroll 2
  for (int t = 0; t < T; ++t) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* db = g + i * 288;
    const uint8_t* qb = db + 32;
    __m256i p[2][T];
#pragma GCC unroll 2
    for (int t = 0; t < T; ++t) p[0][t] = p[1][t] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      __m256i alo[T], ahi[T];
#pragma GCC unroll 2
      for (int t = 0; t < T; ++t) {
        const uint8_t* aq = a + t * a_stride + i * sizeof(BlockQ8_0) + 2;
        alo[t] = _mm256_set1_epi32(load_i32(aq + 4 * c));
        ahi[t] = _mm256_set1_epi32(load_i32(aq + 16 + 4 * c));
      }
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb + 64 * c + 32 * h));
        const __m256i lo = _mm256_and_si256(v, m15);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m15);
#pragma GCC unroll 2
        for (int t = 0; t < T; ++t) {
          p[h][t] = _mm256_add_epi16(p[h][t], _mm256_maddubs_epi16(lo, alo[t]));
          p[h][t] = _mm256_add_epi16(p[h][t], _mm256_maddubs_epi16(hi, ahi[t]));
          // Keeps the sum a chain: reassociated into a tree, all 16 products were live at once
          // and the accumulators spilled.
          __asm__("" : "+x"(p[h][t]));
        }
      }
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(db + 16 * h)));
#pragma GCC unroll 2
      for (int t = 0; t < T; ++t) {
        const Q4Act& ai = info[t * nb + i];
        const __m256i sum =
            _mm256_add_epi32(_mm256_madd_epi16(p[h][t], _mm256_set1_epi16(1)), _mm256_set1_epi32(ai.bias));
        acc[h][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dw, _mm256_set1_ps(ai.d)), acc[h][t]);
      }
    }
  }
#pragma GCC unroll 2
  for (int t = 0; t < T; ++t) {
    _mm256_storeu_ps(out + t * out_stride, acc[0][t]);
    _mm256_storeu_ps(out + t * out_stride + 8, acc[1][t]);
  }
}
#endif

using Q4X16Fn = void (*)(int64_t, const uint8_t*, const uint8_t*, size_t, const Q4Act*, float*, size_t);

#if defined(__AVXVNNI__) && !defined(__AVX512F__)
// Tokens per call: the AVX-VNNI tier's dpbusd group takes 4.
template <bool kVnni>
constexpr int kQ4X16Toks = kVnni ? 4 : kQ4Toks;
#else
template <bool kVnni>
constexpr int kQ4X16Toks = kQ4Toks;
#endif

template <bool kVnni>
Q4X16Fn pick_q4_0_x16(int64_t t) {
#if defined(__AVXVNNI__) && !defined(__AVX512F__)
  if constexpr (kVnni) {
    switch (t) {
      case 1: return q4_0_x16_group_dpbusd<1>;
      case 2: return q4_0_x16_group_dpbusd<2>;
      case 3: return q4_0_x16_group_dpbusd<3>;
      default: return q4_0_x16_group_dpbusd<4>;
    }
  } else
#endif
  {
    switch (t) {
      case 1: return q4_0_x16_group<kVnni, 1>;
      case 2: return q4_0_x16_group<kVnni, 2>;
#ifdef __AVX512F__
      case 3: return q4_0_x16_group<kVnni, 3>;
#endif
      default: return q4_0_x16_group<kVnni, kQ4Toks>;
    }
  }
}

// The gemm on repacked weights: n_rows a multiple of 16, w = the first group, groups
// 16 * w_stride bytes apart (w_stride = the dense row bytes).
template <bool kVnni>
void gemm_q4_0_x16(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                   int64_t n_tok, float* out, size_t out_stride) {
  const int64_t nb = k / kQK;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  const Q4Act* info = q4_act_info(nb, ab, a_stride, n_tok);
  for (int64_t r0 = 0; r0 + kX16Rows <= n_rows; r0 += kX16Rows) {
    const uint8_t* g = wb + static_cast<size_t>(r0) * w_stride;
    for (int64_t t0 = 0; t0 < n_tok; t0 += kQ4X16Toks<kVnni>) {
      const int64_t nt = n_tok - t0 < kQ4X16Toks<kVnni> ? n_tok - t0 : kQ4X16Toks<kVnni>;
      pick_q4_0_x16<kVnni>(nt)(nb, g, ab + t0 * a_stride, a_stride, info + t0 * nb, out + t0 * out_stride + r0,
                               out_stride);
    }
  }
}

}  // namespace llama_order
}  // namespace
}  // namespace baton::kernels

// Defines gemm_q4_0_x16##SUFFIX in the current namespace.
#define BATON_LEGACY_Q4_0_X16_GEMM(SUFFIX, VNNI)                                                                    \
  void gemm_q4_0_x16##SUFFIX(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, \
                             float* out, size_t os) {                                                               \
    llama_order::gemm_q4_0_x16<VNNI>(k, w, ws, nr, a, as, nt, out, os);                                             \
  }
