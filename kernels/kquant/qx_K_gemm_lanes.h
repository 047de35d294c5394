// The Q2_K / Q3_K / Q6_K gemm in llama.cpp's AVX2 vec_dot order (definition and scalar reference:
// kquant/qx_K_gemm_lanes_scalar.h): per (row, token) 8 float lanes, lane L accumulating, super-block after
// super-block, fma(a.d * d, float(exact int32 lane L), acc_L) (after the Q2_K min term), then
// llama.cpp's hsum_float_8. The int32 lane L of a super-block is the sum over its 8 chunks of 32
// elements of scale * (the 4 products at 4L..4L+3), computed as ggml does with vpmaddubsw (pair
// sums: never saturate here) and vpmaddwd against the chunk's two 16-element scales. Quant
// offsets: Q3_K's 4 is subtracted from the pair sums as vpmaddubsw(4, a), which depends on the
// token only and is computed once per token tile; Q6_K's 32 is taken off each lane L as
// 32 * (sc[2L] * bsums[2L] + sc[2L + 1] * bsums[2L + 1]), as ggml does (lanes differ
// otherwise). Integer sums are exact, so any instruction order gives the same lanes, and the
// float steps are the same correctly rounded operations as the reference: every ISA copy of
// this file returns the scalar reference's bits for any n_rows / n_tok / tile position.
//
// Loop order: token tiles of up to kTokenTile rows; inside, each weight row's super-blocks are
// decoded once (into registers / a small stack block) and dotted with every token of the tile.
// Included by files built for x86-64-v3 or higher; internal linkage keeps each ISA's copy apart.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/kquant/blocks.h"
#include "kernels/core/simd256_tier.h"

namespace baton::kernels::kq_lanes {
namespace {  // NOLINT: one copy per ISA translation unit (different -march), never shared

inline __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m128i load16(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

inline float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return _cvtsh_ss(h);
}
inline float float_at(const uint8_t* p) {
  float f;
  std::memcpy(&f, p, sizeof f);
  return f;
}

// llama.cpp's hsum_float_8: ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)).
inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// One decoded weight super-block: q[c] = unsigned quants of elements 32c..32c+31 (offset not
// removed), sv[c] = int16 scales for chunk c's 16 pair sums (sub-block 2c for the low 128 bits,
// 2c + 1 for the high), mins = the 16 Q2_K sub-block mins as int16.
struct WBlock {
  __m256i q[8];
  __m256i sv[8];
  __m256i mins;
  __m256i s16;    // Q6_K: the 16 sub-block scales as int16
  __m256i sp[4];  // Q6_K, AVX-VNNI tier: chunks 2j / 2j + 1's scales as the two int16 of each dword
  float d;
  float dmin;
};

// s16 = the 16 sub-block scales as int16, natural order -> the 8 per-chunk scale vectors.
inline void scale_vectors(__m256i s16, WBlock& w) {
  const __m256i lo = _mm256_permute4x64_epi64(s16, 0x44), hi = _mm256_permute4x64_epi64(s16, 0xEE);
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m256i pick = _mm256_setr_m128i(_mm_set1_epi16(static_cast<int16_t>(((4 * c + 1) << 8) | (4 * c))),
                                           _mm_set1_epi16(static_cast<int16_t>(((4 * c + 3) << 8) | (4 * c + 2))));
    w.sv[c] = _mm256_shuffle_epi8(lo, pick);
    w.sv[c + 4] = _mm256_shuffle_epi8(hi, pick);
  }
}

// Q6_K's scale pairs for the AVX-VNNI form (block_step): dword lane L of sp[j] = (scale of chunk
// 2j's lane L, scale of chunk 2j + 1's lane L) as int16, i.e. sub-blocks (4j, 4j + 2) in lanes
// 0..3 and (4j + 1, 4j + 3) in lanes 4..7.
template <int J>
inline __m256i q6_scale_pairs(__m256i s16) {
  const __m256i src = J < 2 ? _mm256_permute4x64_epi64(s16, 0x44) : _mm256_permute4x64_epi64(s16, 0xEE);
  constexpr char w = static_cast<char>(2 * ((4 * J) % 8));  // byte offset of word 4j within src's lanes
  const __m256i pick = _mm256_setr_epi8(w, w + 1, w + 4, w + 5, w, w + 1, w + 4, w + 5, w, w + 1, w + 4, w + 5, w,
                                        w + 1, w + 4, w + 5, w + 2, w + 3, w + 6, w + 7, w + 2, w + 3, w + 6, w + 7,
                                        w + 2, w + 3, w + 6, w + 7, w + 2, w + 3, w + 6, w + 7);
  return _mm256_shuffle_epi8(src, pick);
}

struct Q6 {
  static constexpr size_t kBytes = sizeof(BlockQ6K);
  static constexpr int kOffset = 0;  // the -32 goes through the bsums instead (kBsumOffset)
  static constexpr bool kBsumOffset = true;
  static constexpr bool kMins = false;
  // q[c] = the unsigned quants (0..63) of elements 32c..32c+31, in order.
  static void quants(const uint8_t* x, __m256i (&q)[8]) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = load32(x + offsetof(BlockQ6K, ql) + 64 * h);
      const __m256i ql1 = load32(x + offsetof(BlockQ6K, ql) + 64 * h + 32);
      const __m256i qh = load32(x + offsetof(BlockQ6K, qh) + 32 * h);
      // 16-bit shifts move bits across bytes; the 0x30 mask keeps only the wanted pair.
      q[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45));
      q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(ql1, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45));
      q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4), _mm256_and_si256(qh, bits45));
      q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                                     _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45));
    }
  }
  static void load(const uint8_t* x, WBlock& w) {
    quants(x, w.q);
    w.s16 = _mm256_cvtepi8_epi16(load16(x + offsetof(BlockQ6K, scales)));
    if constexpr (dot256::kVnni) {
      w.sp[0] = q6_scale_pairs<0>(w.s16);
      w.sp[1] = q6_scale_pairs<1>(w.s16);
      w.sp[2] = q6_scale_pairs<2>(w.s16);
      w.sp[3] = q6_scale_pairs<3>(w.s16);
    } else {
      scale_vectors(w.s16, w);
    }
    w.d = half_at(x + offsetof(BlockQ6K, d));
  }
};

struct Q3 {
  static constexpr size_t kBytes = sizeof(BlockQ3K);
  static constexpr int kOffset = 4;
  static constexpr bool kBsumOffset = false;
  static constexpr bool kMins = false;
  // Chunk 4H + J: bits 2J..2J+1 of qs[32H + l], bit 2 from bit 4H + J of hmask[l].
  template <int H, int J>
  static __m256i chunk(__m256i q32, __m256i hmask) {
    constexpr int kShift = 2 - (4 * H + J);
    __m256i high;
    if constexpr (kShift > 0) high = _mm256_slli_epi16(hmask, kShift);
    else if constexpr (kShift < 0) high = _mm256_srli_epi16(hmask, -kShift);
    else high = hmask;
    return _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q32, 2 * J), _mm256_set1_epi8(3)),
                           _mm256_and_si256(high, _mm256_set1_epi8(4)));
  }
  static void load(const uint8_t* x, WBlock& w) {
    const __m256i hmask = load32(x + offsetof(BlockQ3K, hmask));
    const __m256i q0 = load32(x + offsetof(BlockQ3K, qs)), q1 = load32(x + offsetof(BlockQ3K, qs) + 32);
    w.q[0] = chunk<0, 0>(q0, hmask);
    w.q[1] = chunk<0, 1>(q0, hmask);
    w.q[2] = chunk<0, 2>(q0, hmask);
    w.q[3] = chunk<0, 3>(q0, hmask);
    w.q[4] = chunk<1, 0>(q1, hmask);
    w.q[5] = chunk<1, 1>(q1, hmask);
    w.q[6] = chunk<1, 2>(q1, hmask);
    w.q[7] = chunk<1, 3>(q1, hmask);
    // The 16 6-bit scales (biased by 32): low nibbles from bytes 0..7, high pairs from 8..11.
    constexpr uint32_t kLow2 = 0x03030303, kLow4 = 0x0f0f0f0f;
    uint32_t a[3];
    std::memcpy(a, x + offsetof(BlockQ3K, scales), 12);
    const __m128i sc = _mm_setr_epi32(static_cast<int>((a[0] & kLow4) | ((a[2] & kLow2) << 4)),
                                      static_cast<int>((a[1] & kLow4) | (((a[2] >> 2) & kLow2) << 4)),
                                      static_cast<int>(((a[0] >> 4) & kLow4) | (((a[2] >> 4) & kLow2) << 4)),
                                      static_cast<int>(((a[1] >> 4) & kLow4) | (((a[2] >> 6) & kLow2) << 4)));
    scale_vectors(_mm256_cvtepi8_epi16(_mm_sub_epi8(sc, _mm_set1_epi8(32))), w);
    w.d = half_at(x + offsetof(BlockQ3K, d));
  }
};

struct Q2 {
  static constexpr size_t kBytes = sizeof(BlockQ2K);
  static constexpr int kOffset = 0;
  static constexpr bool kBsumOffset = false;
  static constexpr bool kMins = true;
  static void load(const uint8_t* x, WBlock& w) {
    const __m256i three = _mm256_set1_epi8(3);
    const __m256i q0 = load32(x + offsetof(BlockQ2K, qs)), q1 = load32(x + offsetof(BlockQ2K, qs) + 32);
    w.q[0] = _mm256_and_si256(q0, three);
    w.q[1] = _mm256_and_si256(_mm256_srli_epi16(q0, 2), three);
    w.q[2] = _mm256_and_si256(_mm256_srli_epi16(q0, 4), three);
    w.q[3] = _mm256_and_si256(_mm256_srli_epi16(q0, 6), three);
    w.q[4] = _mm256_and_si256(q1, three);
    w.q[5] = _mm256_and_si256(_mm256_srli_epi16(q1, 2), three);
    w.q[6] = _mm256_and_si256(_mm256_srli_epi16(q1, 4), three);
    w.q[7] = _mm256_and_si256(_mm256_srli_epi16(q1, 6), three);
    const __m128i packed = load16(x + offsetof(BlockQ2K, scales));
    const __m128i low4 = _mm_set1_epi8(0x0F);
    scale_vectors(_mm256_cvtepu8_epi16(_mm_and_si128(packed, low4)), w);
    w.mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), low4));
    w.d = half_at(x + offsetof(BlockQ2K, d));
    w.dmin = half_at(x + offsetof(BlockQ2K, dmin));
  }
};

// One super-block of one (row, token): acc (8 lanes) updated as the reference does. ab = the
// token's Q8_K block, off = its 8 offset pair-sum vectors (unused when Fmt::kOffset == 0).
template <class Fmt>
inline __m256 block_step(const WBlock& w, const uint8_t* ab, const __m256i* off, __m256 acc) {
  const uint8_t* aq = ab + offsetof(BlockQ8K, qs);
  __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
  if constexpr (dot256::kVnni && std::is_same_v<Fmt, Q6>) {
    // Q6_K in the AVX-VNNI tier: lane L of vpdpbusd(q, a) is chunk c's 4 products at 4L..4L+3
    // exactly (|sum| <= 4 * 63 * 128 < 2^15), so two chunks' lanes fit the two int16 halves of
    // each dword and one vpdpwssd applies both scales: 2 vpdpbusd + 1 vpdpwssd per 64 products on
    // the multiply pipes, where vpmaddubsw + vpdpwssd take 4. The same int32 lanes.
    const __m256i low16 = _mm256_set1_epi32(0xFFFF);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m256i l0 = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), w.q[2 * j], load32(aq + 64 * j));
      const __m256i l1 = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), w.q[2 * j + 1], load32(aq + 64 * j + 32));
      const __m256i x = _mm256_or_si256(_mm256_and_si256(l0, low16), _mm256_slli_epi32(l1, 16));
      if (j % 2 == 0) s0 = _mm256_dpwssd_avx_epi32(s0, x, w.sp[j]);
      else s1 = _mm256_dpwssd_avx_epi32(s1, x, w.sp[j]);
    }
  } else {
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      __m256i p = _mm256_maddubs_epi16(w.q[c], load32(aq + 32 * c));
      if constexpr (Fmt::kOffset != 0) p = _mm256_sub_epi16(p, _mm256_load_si256(off + c));
      // vpmaddwd by the scales and the add: one vpdpwssd in the AVX-VNNI tier (simd256_tier.h).
      if (c % 2 == 0) s0 = dot256::dpwssd(s0, p, w.sv[c]);
      else s1 = dot256::dpwssd(s1, p, w.sv[c]);
    }
  }
  __m256i lanes = _mm256_add_epi32(s0, s1);
  if constexpr (Fmt::kBsumOffset) {
    // Q6_K: lane L -= 32 * (sc[2L] * bsums[2L] + sc[2L + 1] * bsums[2L + 1]).
    const __m256i corr = _mm256_madd_epi16(w.s16, load32(ab + offsetof(BlockQ8K, bsums)));
    lanes = _mm256_sub_epi32(lanes, _mm256_slli_epi32(corr, 5));
  }
  const float ad = float_at(ab + offsetof(BlockQ8K, d));
  if constexpr (Fmt::kMins) {
    const __m256i prod = _mm256_madd_epi16(w.mins, load32(ab + offsetof(BlockQ8K, bsums)));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(-ad * w.dmin), _mm256_cvtepi32_ps(prod), acc);
  }
  return _mm256_fmadd_ps(_mm256_set1_ps(ad * w.d), _mm256_cvtepi32_ps(lanes), acc);
}

// Q6_K, one (row, token) super-block fused: each chunk is decoded right before its products,
// so only a few vectors are live (the 16 ymm registers of AVX2 do not hold a whole WBlock).
// The same integer lanes and float steps as block_step<Q6>.
inline __m256 q6_single_step(const uint8_t* x, const uint8_t* ab, __m256 acc) {
  const uint8_t* aq = ab + offsetof(BlockQ8K, qs);
  const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
  const __m256i s16 = _mm256_cvtepi8_epi16(load16(x + offsetof(BlockQ6K, scales)));
  // the scales of each half (immediates stay constants when the loop is not unrolled, e.g. -O1)
  const __m256i sc_half[2] = {_mm256_permute4x64_epi64(s16, 0x44), _mm256_permute4x64_epi64(s16, 0xEE)};
  __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    const __m256i sc = sc_half[h];
    const __m256i ql0 = load32(x + offsetof(BlockQ6K, ql) + 64 * h);
    const __m256i ql1 = load32(x + offsetof(BlockQ6K, ql) + 64 * h + 32);
    const __m256i qh = load32(x + offsetof(BlockQ6K, qh) + 32 * h);
    __m256i q[4];
    q[0] = _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45));
    q[1] = _mm256_or_si256(_mm256_and_si256(ql1, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45));
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4), _mm256_and_si256(qh, bits45));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                           _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45));
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m256i pick = _mm256_setr_m128i(_mm_set1_epi16(static_cast<int16_t>(((4 * c + 1) << 8) | (4 * c))),
                                             _mm_set1_epi16(static_cast<int16_t>(((4 * c + 3) << 8) | (4 * c + 2))));
      const __m256i p = _mm256_maddubs_epi16(q[c], load32(aq + 128 * h + 32 * c));
      if (c % 2 == 0) s0 = dot256::dpwssd(s0, p, _mm256_shuffle_epi8(sc, pick));
      else s1 = dot256::dpwssd(s1, p, _mm256_shuffle_epi8(sc, pick));
    }
  }
  // lane L -= 32 * (sc[2L] * bsums[2L] + sc[2L + 1] * bsums[2L + 1]).
  const __m256i corr = _mm256_madd_epi16(s16, load32(ab + offsetof(BlockQ8K, bsums)));
  const __m256i lanes = _mm256_sub_epi32(_mm256_add_epi32(s0, s1), _mm256_slli_epi32(corr, 5));
  const float d = float_at(ab + offsetof(BlockQ8K, d)) * half_at(x + offsetof(BlockQ6K, d));
  return _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(lanes), acc);
}

inline constexpr int64_t kTokenTile = 8;

// Per-thread scratch for the offset pair sums of a token tile (kTokenTile * nb * 8 vectors).
struct Vec256 {
  __m256i v;
};
inline __m256i* offset_scratch(size_t n_vectors) {
  thread_local std::vector<Vec256> buf;
  if (buf.size() < n_vectors) buf.resize(n_vectors);
  return &buf.data()->v;
}

template <class Fmt>
void gemm(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
          float* out, size_t out_stride) {
  const int64_t nb = k / kQK_K;
  const uint8_t* w8 = static_cast<const uint8_t*>(w);
  const uint8_t* a8 = static_cast<const uint8_t*>(a);
  __m256i* off = Fmt::kOffset != 0 ? offset_scratch(static_cast<size_t>(kTokenTile * nb * 8)) : nullptr;
  for (int64_t t0 = 0; t0 < n_tok; t0 += kTokenTile) {
    const int64_t nt = std::min(kTokenTile, n_tok - t0);
    if constexpr (Fmt::kOffset != 0) {
      const __m256i ov = _mm256_set1_epi8(static_cast<char>(Fmt::kOffset));
      for (int64_t t = 0; t < nt; ++t) {
        const uint8_t* ar = a8 + static_cast<size_t>(t0 + t) * a_stride;
        for (int64_t b = 0; b < nb; ++b)
          for (int c = 0; c < 8; ++c)
            off[(t * nb + b) * 8 + c] =
                _mm256_maddubs_epi16(ov, load32(ar + b * sizeof(BlockQ8K) + offsetof(BlockQ8K, qs) + 32 * c));
      }
    }
    if (nt == 1) {
      // Decode: one token, so the decoded block can stay in registers (no token loop around it).
      const uint8_t* ar = a8 + static_cast<size_t>(t0) * a_stride;
      for (int64_t r = 0; r < n_rows; ++r) {
        const uint8_t* wr = w8 + static_cast<size_t>(r) * w_stride;
        __m256 acc = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
          if constexpr (std::is_same_v<Fmt, Q6>) {
            acc = q6_single_step(wr + static_cast<size_t>(b) * Fmt::kBytes,
                                 ar + static_cast<size_t>(b) * sizeof(BlockQ8K), acc);
          } else {
            WBlock wb;
            Fmt::load(wr + static_cast<size_t>(b) * Fmt::kBytes, wb);
            acc = block_step<Fmt>(wb, ar + static_cast<size_t>(b) * sizeof(BlockQ8K), off ? off + b * 8 : nullptr, acc);
          }
        }
        out[static_cast<size_t>(t0) * out_stride + static_cast<size_t>(r)] = hsum8(acc);
      }
      continue;
    }
    for (int64_t r = 0; r < n_rows; ++r) {
      const uint8_t* wr = w8 + static_cast<size_t>(r) * w_stride;
      // The next row's block b is prefetched while this row's block b is dotted with the tile.
      const uint8_t* next = r + 1 < n_rows ? wr + w_stride : nullptr;
      __m256 acc[kTokenTile];
      for (int64_t t = 0; t < nt; ++t) acc[t] = _mm256_setzero_ps();
      for (int64_t b = 0; b < nb; ++b) {
        if (next)
          for (size_t off = 0; off < Fmt::kBytes; off += 64)
            _mm_prefetch(reinterpret_cast<const char*>(next + static_cast<size_t>(b) * Fmt::kBytes + off), _MM_HINT_T0);
        WBlock wb;
        Fmt::load(wr + static_cast<size_t>(b) * Fmt::kBytes, wb);
        for (int64_t t = 0; t < nt; ++t) {
          const uint8_t* ab = a8 + static_cast<size_t>(t0 + t) * a_stride + static_cast<size_t>(b) * sizeof(BlockQ8K);
          acc[t] = block_step<Fmt>(wb, ab, off ? off + (t * nb + b) * 8 : nullptr, acc[t]);
        }
      }
      for (int64_t t = 0; t < nt; ++t)
        out[static_cast<size_t>(t0 + t) * out_stride + static_cast<size_t>(r)] = hsum8(acc[t]);
    }
  }
}

}  // namespace
}  // namespace baton::kernels::kq_lanes
