// The Q5_K gemm on weights repacked at load into groups of 16 rows (repack_q5_k_x16,
// kquant/q5_K_repack_x16.cpp), in the order of TypeOps::gemm for Q5_K (llama.cpp's AVX2
// ggml_vec_dot_q5_K_q8_K, kquant/kernels.h): per output 8 float lanes, per super-block
//   lane_L = fma(a.d * d_w, float(Σ_c sc_c · Σ of the 4 products at 32c + 4L .. +3), lane_L),
//   summs  = fma(-a.d * dmin_w, float(Σ_j m_j · bsum32_j), summs),
// result ggml's hsum_float_8(lanes) + summs. The integer sums are exact (any order gives the same
// bits); every float step is the scalar reference's, lane-wise over the 16 rows.
//
// Layout of one group (16 rows; the same 16 * 176 bytes per super-block as the plain rows),
// super-block b at 2816 b:
//   [0, 32)        d of rows 0..15 (f16)          [32, 64)   dmin of rows 0..15 (f16)
//   [64 + 64 u, +64)  u = 0, 1, 2: bytes 4u..4u+3 of row j's 12 packed scale bytes at + 4 j
//   [256 + 320 L, +320)  L = 0..7, five 64-byte units, row j's 4 bytes at + 4 j in each:
//                  unit 0: qh bytes 4L..4L+3; unit 1 + c (c = 0..3): qs bytes 32c + 4L..+3
//                  (low nibbles: elements 64c + 4L.., chunk 2c; high: 64c + 32 + 4L.., chunk
//                  2c + 1; bit 4 of chunk j's quant is bit j of the qh byte)
// Lane j of every unit is row j, so the 8 lanes L of llama.cpp's per-row order become 8
// accumulator vectors (vector L = lane L of the 16 rows): per L one block of 5 units decodes the
// 8 chunks' 4-byte quants (dword L of each 32-element chunk), each multiplied with 4 broadcast
// activation bytes (vpmaddubsw) and scaled by its sub-block scale (vpmaddwd + vpaddd; vpdpwssd
// with VNNI when several tokens share the pass). Tokens loop inside the decoded L block (up to 8
// per pass), so a batch of decode rows decodes the weights once. One sequential stream per
// matrix, no transposes: near the read bandwidth where the plain-layout row kernel is not.
// vpmaddubsw cannot saturate: a pair is at most 2 * 31 * 128 = 7936.
// Included by q5_K_gemm_x16_{avx512,avx512vnni}.cpp; internal linkage per ISA.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kquant/blocks.h"
#include "kernels/kquant/q8_K_bsum_pairs.h"
#include "kernels/core/prefetch_l2.h"

#ifndef __AVX512F__
#error "kquant/q5_K_gemm_x16.h is built for AVX-512 only"
#endif

namespace baton::kernels {
namespace {  // NOLINT: one copy per ISA translation unit (different -march), never shared
namespace q5k_x16 {

constexpr int64_t kRows = 16;
constexpr size_t kGroupBlock = 2816;   // bytes of one super-block of a group
constexpr size_t kPrefetchBlocks = 2;  // see kquant/q4_K_gemm_x16.h
constexpr size_t kUnit = 64, kScales = 64, kQuants = 256, kLBlock = 5 * kUnit;
constexpr int kMaxTokens = 8;  // tokens per pass over a decoded L block
static_assert(kGroupBlock == kRows * sizeof(BlockQ5K) && kQuants + 8 * kLBlock == kGroupBlock);

inline int32_t load_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline __m512i load_unit(const uint8_t* p) { return _mm512_loadu_si512(p); }
inline __m512i bcast(int32_t v) { return _mm512_set1_epi32(v); }

// a | (b & m)
inline __m512i or_and(__m512i a, __m512i b, __m512i m) { return _mm512_ternarylogic_epi32(a, b, m, 0xF8); }

// 16-bit lane shift by a compile-time count: left for N > 0, right for N < 0.
template <int N>
inline __m512i shift16(__m512i v) {
  if constexpr (N > 0) return _mm512_slli_epi16(v, N);
  else if constexpr (N < 0) return _mm512_srli_epi16(v, -N);
  else return v;
}

// The lanes' 6-bit scales and mins (ggml's get_scale_min_k4, lane-wise) from the packed words
// u0, u1, u2 (bytes 0..3, 4..7, 8..11 of each row's 12 scale bytes): bytes sc0..3 / sc4..7 /
// m0..3 / m4..7 of each dword.
struct ScaleBytes {
  __m512i sc_lo, sc_hi, m_lo, m_hi;
  ScaleBytes(__m512i u0, __m512i u1, __m512i u2) {
    const __m512i low6 = bcast(0x3F3F3F3F), low4 = bcast(0x0F0F0F0F), top2 = bcast(0x30303030);
    sc_lo = _mm512_and_si512(u0, low6);
    m_lo = _mm512_and_si512(u1, low6);
    sc_hi = or_and(_mm512_and_si512(u2, low4), _mm512_srli_epi32(u0, 2), top2);
    m_hi = or_and(_mm512_and_si512(_mm512_srli_epi32(u2, 4), low4), _mm512_srli_epi32(u1, 2), top2);
  }
};

// Bytes I0 and I1 (0..3) of each dword of x, zero-extended into its low and high 16 bits: the int16
// pair operand of vpmaddwd / vpdpwssd.
template <int I0, int I1>
inline __m512i pair16(__m512i x) {
  constexpr char z = static_cast<char>(0x80);
  const __m128i idx = _mm_setr_epi8(I0, z, I1, z, 4 + I0, z, 4 + I1, z, 8 + I0, z, 8 + I1, z, 12 + I0, z, 12 + I1, z);
  return _mm512_shuffle_epi8(x, _mm512_broadcast_i32x4(idx));
}

// acc + Σ over the int16 pairs of p * s per dword.
template <bool kVnni>
inline __m512i dot16(__m512i acc, __m512i p, __m512i s) {
  if constexpr (kVnni) return _mm512_dpwssd_epi32(acc, p, s);
  else return _mm512_add_epi32(acc, _mm512_madd_epi16(p, s));
}

// The 8 chunks' quants of lane block L (unit 0 = qh, units 1..4 = qs of chunk pairs).
inline void decode_block(const uint8_t* blk, __m512i (&q)[8]) {
  const __m512i low4 = bcast(0x0F0F0F0F), bit4 = bcast(0x10101010);
  const __m512i qh = load_unit(blk);
  const __m512i v0 = load_unit(blk + kUnit), v1 = load_unit(blk + 2 * kUnit), v2 = load_unit(blk + 3 * kUnit),
                v3 = load_unit(blk + 4 * kUnit);
  q[0] = or_and(_mm512_and_si512(v0, low4), shift16<4>(qh), bit4);
  q[1] = or_and(_mm512_and_si512(_mm512_srli_epi16(v0, 4), low4), shift16<3>(qh), bit4);
  q[2] = or_and(_mm512_and_si512(v1, low4), shift16<2>(qh), bit4);
  q[3] = or_and(_mm512_and_si512(_mm512_srli_epi16(v1, 4), low4), shift16<1>(qh), bit4);
  q[4] = or_and(_mm512_and_si512(v2, low4), qh, bit4);
  q[5] = or_and(_mm512_and_si512(_mm512_srli_epi16(v2, 4), low4), shift16<-1>(qh), bit4);
  q[6] = or_and(_mm512_and_si512(v3, low4), shift16<-2>(qh), bit4);
  q[7] = or_and(_mm512_and_si512(_mm512_srli_epi16(v3, 4), low4), shift16<-3>(qh), bit4);
}

// NT tokens (activation rows a[t]) x one 16-row group g: out[t][0..15].
template <bool kVnni, int NT>
// sp[t]: token t's bsum_pairs (kquant/q8_K_bsum_pairs.h), nb * kBsumPairsPerBlock dwords.
void group_tokens(int64_t nb, const uint8_t* g, const uint8_t* const* a, const uint32_t* const* sp, float* const* out) {
  __m512 acc[NT][8], summs[NT];
  for (int t = 0; t < NT; ++t) {
    for (auto& v : acc[t]) v = _mm512_setzero_ps();
    summs[t] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* x = g + static_cast<size_t>(b) * kGroupBlock;
    const size_t a_off = static_cast<size_t>(b) * sizeof(BlockQ8K);
    // Prefetched as kquant/q4_K_gemm_x16.h (T0, 2 blocks ahead), spread over the lane blocks
    // rather than one burst of 44 lines (docs/BENCHMARKS.md, Kernel notes).
    const uintptr_t ahead = reinterpret_cast<uintptr_t>(x) + kPrefetchBlocks * kGroupBlock;
    prefetch_l1<kQuants>(ahead);
    const __m512i u0 = load_unit(x + kScales), u1 = load_unit(x + kScales + kUnit),
                  u2 = load_unit(x + kScales + 2 * kUnit);
    const ScaleBytes sb(u0, u1, u2);
    const __m512i sc[8] = {pair16<0, 0>(sb.sc_lo), pair16<1, 1>(sb.sc_lo), pair16<2, 2>(sb.sc_lo),
                           pair16<3, 3>(sb.sc_lo), pair16<0, 0>(sb.sc_hi), pair16<1, 1>(sb.sc_hi),
                           pair16<2, 2>(sb.sc_hi), pair16<3, 3>(sb.sc_hi)};
    // mins (m_2P, m_2P+1) per dword: times the token's bsum pair P, exactly
    const __m512i mp[4] = {pair16<0, 1>(sb.m_lo), pair16<2, 3>(sb.m_lo), pair16<0, 1>(sb.m_hi), pair16<2, 3>(sb.m_hi)};
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
    const __m512 dmw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32)));
    __m512 d[NT];
    for (int t = 0; t < NT; ++t) {
      const uint8_t* ab = a[t] + a_off;
      float da;
      std::memcpy(&da, ab + offsetof(BlockQ8K, d), 4);
      const uint32_t* pairs = sp[t] + static_cast<size_t>(b) * kBsumPairsPerBlock;
      __m512i summ = _mm512_setzero_si512();
      for (int p = 0; p < kBsumPairsPerBlock; ++p)
        summ = dot16<kVnni>(summ, mp[p], bcast(static_cast<int32_t>(pairs[p])));
      d[t] = _mm512_mul_ps(dw, _mm512_set1_ps(da));
      summs[t] = _mm512_fmadd_ps(_mm512_mul_ps(dmw, _mm512_set1_ps(-da)), _mm512_cvtepi32_ps(summ), summs[t]);
    }
    const uint8_t* blocks = x + kQuants;
#pragma GCC unroll 8
    for (int L = 0; L < 8; ++L) {
      __m512i q[8];
      prefetch_l1<kLBlock>(ahead + kQuants + static_cast<size_t>(L) * kLBlock);
      decode_block(blocks + static_cast<size_t>(L) * kLBlock, q);
      for (int t = 0; t < NT; ++t) {
        const uint8_t* aq = a[t] + a_off + offsetof(BlockQ8K, qs) + 4 * L;
        __m512i lane = _mm512_setzero_si512();
        // One token: vpmaddwd + vpaddd measured ~8 % faster than the vpdpwssd chain (its latency
        // shows); several tokens hide it.
#pragma GCC unroll 8
        for (int c = 0; c < 8; ++c)
          lane = dot16 < kVnni && (NT > 1) > (lane, _mm512_maddubs_epi16(q[c], bcast(load_i32(aq + 32 * c))), sc[c]);
        acc[t][L] = _mm512_fmadd_ps(d[t], _mm512_cvtepi32_ps(lane), acc[t][L]);
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    // ggml's hsum_float_8, lane-wise: (x0 + x4) ..., then (s0 + s2) + (s1 + s3); + summs
    const __m512 s0 = _mm512_add_ps(acc[t][4], acc[t][0]), s1 = _mm512_add_ps(acc[t][5], acc[t][1]);
    const __m512 s2 = _mm512_add_ps(acc[t][6], acc[t][2]), s3 = _mm512_add_ps(acc[t][7], acc[t][3]);
    const __m512 h = _mm512_add_ps(_mm512_add_ps(s0, s2), _mm512_add_ps(s1, s3));
    _mm512_storeu_ps(out[t], _mm512_add_ps(h, summs[t]));
  }
}

template <bool kVnni, int NT>
void group_pass(int64_t nb, const uint8_t* g, const uint8_t* a, size_t a_stride, const uint32_t* sp, int64_t t0,
                float* out, size_t out_stride) {
  const uint8_t* ap[NT];
  const uint32_t* spp[NT];
  float* op[NT];
  for (int t = 0; t < NT; ++t) {
    ap[t] = a + static_cast<size_t>(t0 + t) * a_stride;
    spp[t] = sp + static_cast<size_t>(t0 + t) * static_cast<size_t>(nb) * kBsumPairsPerBlock;
    op[t] = out + static_cast<size_t>(t0 + t) * out_stride;
  }
  group_tokens<kVnni, NT>(nb, g, ap, spp, op);
}

// The gemm on repacked weights: n_rows a multiple of 16, w = the first group, groups
// 16 * w_stride bytes apart (w_stride = the dense row bytes). Per group, tokens in passes of
// 8, then 4, 2, 1 (the group stays in cache between passes).
template <bool kVnni>
void gemm(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
          float* out, size_t out_stride) {
  const int64_t nb = k / kQK_K;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  thread_local std::vector<uint32_t> sp;
  sp.resize(static_cast<size_t>(n_tok * nb) * kBsumPairsPerBlock);
  bsum_pairs(ab, a_stride, n_tok, nb, sp.data());
  const uint32_t* s = sp.data();
  for (int64_t r0 = 0; r0 + kRows <= n_rows; r0 += kRows) {
    const uint8_t* g = wb + static_cast<size_t>(r0) * w_stride;
    float* o = out + r0;
    int64_t t = 0;
    for (; n_tok - t >= kMaxTokens; t += kMaxTokens)
      group_pass<kVnni, kMaxTokens>(nb, g, ab, a_stride, s, t, o, out_stride);
    if (n_tok - t >= 4) {
      group_pass<kVnni, 4>(nb, g, ab, a_stride, s, t, o, out_stride);
      t += 4;
    }
    if (n_tok - t >= 2) {
      group_pass<kVnni, 2>(nb, g, ab, a_stride, s, t, o, out_stride);
      t += 2;
    }
    if (n_tok - t >= 1) group_pass<kVnni, 1>(nb, g, ab, a_stride, s, t, o, out_stride);
  }
}

}  // namespace q5k_x16
}  // namespace
}  // namespace baton::kernels
