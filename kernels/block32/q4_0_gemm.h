// The Q4_0 gemm in llama.cpp's AVX2 repack order (ggml_gemv/gemm_q4_0_8x8_q8_0): one float
// chain per output, acc = fma(float(block integer sum), d_w * d_a, acc) over the blocks in
// order (scalar reference: block32/block32_ops_scalar.cpp). Computed 8 rows at a time in a ymm (AVX2) or
// 16 rows in a zmm (AVX-512), lane j of the accumulator = row j's chain.
//
// Per block the exact integer sum Σ (n_j - 8) a_j is formed as Σ n_j a_j + bias with
// bias = -8 Σ a_j (n = the raw nibble 0..15, maddubs' / dpbusd's unsigned operand directly).
// The bias and d_a of every (token, block) are computed once per gemm call (Q4Act) and shared
// by all row groups. Rows sit in 128-bit lanes: vector p_m holds row 4L + m in lane L (low
// nibbles against activations 0..15, high nibbles against 16..31, each 128-bit half
// broadcast), giving 4 int32 partial sums per row; a 4x4 transpose-add of p_0..p_3 leaves lane
// j = row j's block sum (integer sums: exact in any order). Then acc = fma(float(sum),
// d_w * d_a, acc) per lane with d_w of the rows converted by one vcvtph2ps: the scalar
// reference's std::fma(float(sumi), d_w * d_a, acc), bit for bit.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/block32/blocks.h"
#include "kernels/block32/block32_gemm_simd.h"

namespace baton::kernels {
namespace {  // NOLINT: one copy per ISA translation unit (different -march), never shared
namespace llama_order {

// Per (token, block) of Q8_0 activations: -8 * Σ q (exact) and d as a float.
struct Q4Act {
  int32_t bias;
  float d;
};

// Σ of the 32 int8 quants of one block: SAD of (q ^ 0x80) against 0 is Σ (q + 128).
inline int32_t act_sum32(const uint8_t* q) {
  const __m256i x = _mm256_xor_si256(load32(q), _mm256_set1_epi8(static_cast<char>(0x80)));
  const __m256i s = _mm256_sad_epu8(x, _mm256_setzero_si256());
  __m128i t = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  t = _mm_add_epi64(t, _mm_unpackhi_epi64(t, t));
  return _mm_cvtsi128_si32(t) - 32 * 128;
}

// info[t * nb + i] for the n_tok activation rows at a (a_stride bytes apart). The buffer is
// this thread's, reused across calls.
inline const Q4Act* q4_act_info(int64_t nb, const uint8_t* a, size_t a_stride, int64_t n_tok) {
  thread_local std::vector<Q4Act> buffer;
  const size_t need = static_cast<size_t>(nb * n_tok);
  if (buffer.size() < need) buffer.resize(need);
  for (int64_t t = 0; t < n_tok; ++t) {
    const uint8_t* at = a + static_cast<size_t>(t) * a_stride;
    Q4Act* info = buffer.data() + t * nb;
    for (int64_t i = 0; i < nb; ++i) {
      const uint8_t* ab = at + i * sizeof(BlockQ8_0);
      info[i] = Q4Act{-8 * act_sum32(ab + 2), half_to_float(ab)};
    }
  }
  return buffer.data();
}

// The f16 scales of 4 rows (stride s) packed into 64 bits, row 0 lowest (integer units only).
inline long long halves4(const uint8_t* p, size_t s) {
  uint16_t h0, h1, h2, h3;
  __builtin_memcpy(&h0, p, 2);
  __builtin_memcpy(&h1, p + s, 2);
  __builtin_memcpy(&h2, p + 2 * s, 2);
  __builtin_memcpy(&h3, p + 3 * s, 2);
  return static_cast<long long>(h0 | (uint64_t{h1} << 16) | (uint64_t{h2} << 32) | (uint64_t{h3} << 48));
}

// Raw nibble bytes n and their products with one activation block: low nibbles against
// activations 0..15 (alo), high nibbles against 16..31 (ahi); 4 int32 sums per 128-bit lane
// (|each product| <= 15 * 128, so maddubs' int16 pair sums cannot saturate).
template <bool kVnni>
inline __m256i nibble_dot2(__m256i lo, __m256i hi, __m256i alo, __m256i ahi) {
  if constexpr (kVnni) {
    return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), lo, alo), hi, ahi);
  } else {
    return _mm256_madd_epi16(_mm256_set1_epi16(1),
                             _mm256_add_epi16(_mm256_maddubs_epi16(lo, alo), _mm256_maddubs_epi16(hi, ahi)));
  }
}

// Lane L element m of the result = the sum of the 4 int32 of lane L of p_m.
inline __m256i transpose_add4(__m256i p0, __m256i p1, __m256i p2, __m256i p3) {
  const __m256i s01 = _mm256_add_epi32(_mm256_unpacklo_epi32(p0, p1), _mm256_unpackhi_epi32(p0, p1));
  const __m256i s23 = _mm256_add_epi32(_mm256_unpacklo_epi32(p2, p3), _mm256_unpackhi_epi32(p2, p3));
  return _mm256_add_epi32(_mm256_unpacklo_epi64(s01, s23), _mm256_unpackhi_epi64(s01, s23));
}

// Prefetch: a group of rows is one contiguous stretch of memory when the rows are dense (w_stride
// = row bytes; otherwise the hint is merely useless). While a group is computed, the next one
// is fetched into L2 as one sequential stream, kBytes per block step: 4096x4096 decode ~800 ->
// ~440 us, where prefetching each row's own stream ahead gained nothing (the 8 or 16 interleaved
// row streams were what held the memory system back).
// (Integer address arithmetic: past the last group the address lies outside the weights, which a
// prefetch may touch but a pointer may not point to.)
template <size_t kBytes>
inline void prefetch_l2(const uint8_t* base, size_t offset) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(base) + offset;
#pragma GCC unroll 8
  for (size_t b = 0; b < kBytes; b += 64) _mm_prefetch(reinterpret_cast<const char*>(p + b), _MM_HINT_T1);
}

// 8 rows (w, w_stride apart) x T tokens; info = this tile's first token's Q4Act row (nb apart).
// prefetch: fetch the next group's bytes (the first token tile of a group).
template <bool kVnni, int T>
void q4_0_rows8(int64_t nb, const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride, const Q4Act* info,
                float* out, size_t out_stride, bool prefetch) {
  constexpr size_t kWB = sizeof(BlockQ4_0);
  constexpr size_t kAB = sizeof(BlockQ8_0);
  const __m256i m15 = _mm256_set1_epi8(15);
  __m256 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* wb = w + i * kWB;
    if (prefetch) prefetch_l2<8 * kWB>(w, 8 * w_stride + i * 8 * kWB);
    __m256i lo[4], hi[4];
#pragma GCC unroll 4
    for (int m = 0; m < 4; ++m) {  // rows m and m + 4
      const uint8_t* wx = wb + m * w_stride;
      const __m256i v = load2x16(wx + 2, wx + 4 * w_stride + 2);
      lo[m] = _mm256_and_si256(v, m15);
      hi[m] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m15);
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_set_epi64x(halves4(wb + 4 * w_stride, w_stride), halves4(wb, w_stride)));
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const uint8_t* ab = a + t * a_stride + i * kAB;
      const __m256i alo = bcast16(ab + 2), ahi = bcast16(ab + 18);
      const Q4Act& ai = info[t * nb + i];
      const __m256i sum = _mm256_add_epi32(
          transpose_add4(nibble_dot2<kVnni>(lo[0], hi[0], alo, ahi), nibble_dot2<kVnni>(lo[1], hi[1], alo, ahi),
                         nibble_dot2<kVnni>(lo[2], hi[2], alo, ahi), nibble_dot2<kVnni>(lo[3], hi[3], alo, ahi)),
          _mm256_set1_epi32(ai.bias));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dw, _mm256_set1_ps(ai.d)), acc[t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) _mm256_storeu_ps(out + t * out_stride, acc[t]);
}

#ifdef __AVX512F__
template <bool kVnni>
inline __m512i nibble_dot2_512(__m512i lo, __m512i hi, __m512i alo, __m512i ahi) {
  if constexpr (kVnni) {
    return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, alo), hi, ahi);
  } else {
    return _mm512_madd_epi16(_mm512_set1_epi16(1),
                             _mm512_add_epi16(_mm512_maddubs_epi16(lo, alo), _mm512_maddubs_epi16(hi, ahi)));
  }
}

inline __m512i transpose_add4_512(__m512i p0, __m512i p1, __m512i p2, __m512i p3) {
  const __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(p0, p1), _mm512_unpackhi_epi32(p0, p1));
  const __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(p2, p3), _mm512_unpackhi_epi32(p2, p3));
  return _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
}

inline __m512i bcast16_512(const uint8_t* p) {
  return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// 16 rows x T tokens in zmm registers: lane j of acc = row j.
template <bool kVnni, int T>
void q4_0_rows16(int64_t nb, const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride, const Q4Act* info,
                 float* out, size_t out_stride, bool prefetch) {
  constexpr size_t kWB = sizeof(BlockQ4_0);
  constexpr size_t kAB = sizeof(BlockQ8_0);
  const __m512i m15 = _mm512_set1_epi8(15);
  __m512 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  const size_t s = w_stride;
  const __m512i row_offsets =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(w_stride)));
  for (int64_t i = 0; i < nb; ++i) {
    // Row 4q + m of block i at b[q] + m * s: the opaque base keeps the compiler from turning the
    // 16 row addresses into 16 induction variables (it ran out of registers).
    const uint8_t* wb = w + i * kWB;
    asm("" : "+r"(wb));
    const uint8_t* b[4] = {wb, wb + 4 * s, wb + 8 * s, wb + 12 * s};
    if (prefetch) prefetch_l2<16 * kWB>(w, 16 * s + i * 16 * kWB);
    const size_t off[4] = {0, s, 2 * s, 3 * s};
    __m512i lo[4], hi[4];
#pragma GCC unroll 4
    for (int m = 0; m < 4; ++m) {  // rows m, m + 4, m + 8, m + 12
      const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(load2x16(b[0] + off[m] + 2, b[1] + off[m] + 2)),
                                           load2x16(b[2] + off[m] + 2, b[3] + off[m] + 2), 1);
      lo[m] = _mm512_and_si512(v, m15);
      hi[m] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m15);
    }
    // d of the 16 rows: one gather of the blocks' first 4 bytes, truncated to the f16 bits
    // (int32 offsets j * w_stride: rows of up to 2^27 bytes).
    const __m512 dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(row_offsets, wb, 1)));
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const uint8_t* ab = a + t * a_stride + i * kAB;
      const __m512i alo = bcast16_512(ab + 2), ahi = bcast16_512(ab + 18);
      const Q4Act& ai = info[t * nb + i];
      const __m512i sum = _mm512_add_epi32(transpose_add4_512(nibble_dot2_512<kVnni>(lo[0], hi[0], alo, ahi),
                                                              nibble_dot2_512<kVnni>(lo[1], hi[1], alo, ahi),
                                                              nibble_dot2_512<kVnni>(lo[2], hi[2], alo, ahi),
                                                              nibble_dot2_512<kVnni>(lo[3], hi[3], alo, ahi)),
                                           _mm512_set1_epi32(ai.bias));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, _mm512_set1_ps(ai.d)), acc[t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(out + t * out_stride, acc[t]);
}
#endif

using Q4RowsFn = void (*)(int64_t, const uint8_t*, size_t, const uint8_t*, size_t, const Q4Act*, float*, size_t, bool);

// Token tiles: 2 (AVX2: 16 ymm) or 4 (AVX-512).
#ifdef __AVX512F__
constexpr int kQ4Toks = 4;
#else
constexpr int kQ4Toks = 2;
#endif

template <bool kVnni, int kRowsPerGroup>
Q4RowsFn pick_q4_0(int64_t t) {
  if constexpr (kRowsPerGroup == 8) {
    switch (t) {
      case 1: return q4_0_rows8<kVnni, 1>;
      case 2: return q4_0_rows8<kVnni, 2>;
      case 3: return q4_0_rows8<kVnni, 3>;
      default: return q4_0_rows8<kVnni, kQ4Toks>;
    }
  } else {
#ifdef __AVX512F__
    switch (t) {
      case 1: return q4_0_rows16<kVnni, 1>;
      case 2: return q4_0_rows16<kVnni, 2>;
      case 3: return q4_0_rows16<kVnni, 3>;
      default: return q4_0_rows16<kVnni, kQ4Toks>;
    }
#else
    return nullptr;
#endif
  }
}

// Rows [0, n_rows rounded down to 8) of a Q4_0 gemm; returns how many rows it did (the
// caller does the rest with the generic tile in the same chain order).
template <bool kVnni>
int64_t q4_0_gemm_groups(int64_t nb, const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* a,
                         size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  if (n_rows < 8) return 0;
  const Q4Act* info = q4_act_info(nb, a, a_stride, n_tok);
  int64_t r0 = 0;
  auto run_group = [&](auto rows_tag) {
    constexpr int kR = decltype(rows_tag)::value;
    for (; r0 + kR <= n_rows; r0 += kR) {
      for (int64_t t0 = 0; t0 < n_tok; t0 += kQ4Toks) {
        const int64_t nt = n_tok - t0 < kQ4Toks ? n_tok - t0 : kQ4Toks;
        pick_q4_0<kVnni, kR>(nt)(nb, w + r0 * w_stride, w_stride, a + t0 * a_stride, a_stride, info + t0 * nb,
                                 out + t0 * out_stride + r0, out_stride, t0 == 0);
      }
    }
  };
#ifdef __AVX512F__
  run_group(std::integral_constant<int, 16>{});
#endif
  run_group(std::integral_constant<int, 8>{});
  return r0;
}

}  // namespace llama_order
}  // namespace
}  // namespace baton::kernels
