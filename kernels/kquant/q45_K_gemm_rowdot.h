// The K-quant row kernels for one-token decode on unrepacked Q4_K / Q5_K rows (the AVX2 and
// AVX-512 builds; AVX-512 decodes repacked rows with kquant/q4_K_gemm_x16.h / kquant/q5_K_gemm_x16.h, AVX2
// repacked Q5_K rows with kquant/q5_K_gemm_x16p_avx2.cpp, and these serve AVX2 Q4_K, --mmap and row counts
// that are not a multiple of 16): Q4_K as row pairs sharing every instruction
// (gemm_rowdot_pairs<false>), Q5_K 4 rows at a time (gemm_rowdot_pairs<true>). Per
// (row, token) and super-block they compute the same exact integer sumi / summ as every other
// variant (integer sums do not depend on their order), and the float steps are those of the
// Q4_K / Q5_K orders in kquant/kernels.h, so results are bit-identical to the scalar reference for
// any n_rows / n_tok / tile position (batch invariance).
// They replaced an 8-row vphaddd kernel on AVX-512 too, measuring faster (docs/BENCHMARKS.md).
//
// Included by files built for x86-64-v3 or higher; internal linkage keeps each ISA's copy.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/kquant/blocks.h"
#include "kernels/kquant/qx_K_gemm_rows256.h"
#include "kernels/core/scratch.h"
#include "kernels/kquant/qx_K_unpack.h"
#include "kernels/core/prefetch_l2.h"
#include "kernels/core/simd256_tier.h"

namespace baton::kernels::kq {
namespace {

// 16-bit lane shift by a compile-time count: left for N > 0, right for N < 0.
template <int N>
inline __m256i shift16(__m256i v) {
  if constexpr (N > 0) return _mm256_slli_epi16(v, N);
  else if constexpr (N < 0) return _mm256_srli_epi16(v, -N);
  else return v;
}

// Up to this many tokens the gemms use the row kernels (decode); larger batches the tiled kernels.
inline constexpr int64_t kRowdotMaxTokens = 1;

// The same super-block of rows 2p and 2p + 1 of the next 8-row tile into L2: row r's is `ahead`
// bytes after row r's (row_off[r] from wb). Issued before each row pair rather than for all 8 rows
// at the super-block start: a spread prefetch keeps the DRAM stream busier (docs/BENCHMARKS.md).
template <size_t kBytes>
inline void prefetch_next_pair(const uint8_t* wb, const size_t* row_off, size_t ahead, int p) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(wb) + ahead;
  prefetch_l2<kBytes>(base + row_off[2 * p]);
  prefetch_l2<kBytes>(base + row_off[2 * p + 1]);
}

// ---- Q4_K decode: row pairs in the two 128-bit lanes ----------------------------------------
//
// vphaddw/vphaddd cost 2 cycles each on Zen 4 (more uops than a shuffle + an add elsewhere too),
// and the reduction of each row's 8 sub-blocks by them dominated the old 8-row kernel. Two rows A and
// B share every instruction: a chunk of 32 quant bytes of each is recombined by vperm2i128 into
// X = [A bytes 0..15 | B bytes 0..15] and Y = [A 16..31 | B 16..31], so after the nibble split and
// vpmaddubsw against activations whose 16 bytes are repeated in both lanes (prepared once per
// call: q4k_pair_prepare), X's and Y's products of the same sub-block add as int16 (4 products
// <= 4 * 15 * 127 = 7620) and one vpmaddwd applies the scale, A's in lane 0 and B's in lane 1
// (one vpshufb of the pair's unpacked scales). The mins term is one vpmaddwd of both rows' 8 mins
// against the 8 bsum pairs. Per (row, super-block) the integer sums are the exact sumi / summ of
// every other variant and the float steps those of Q4_K's Order::kSplit of kquant/qx_K_gemm_rows256.h (two
// chains, d * sumi and dmin * summ, one fma each per super-block, acc - accm at the end):
// bit-identical results.

// Prepared activations per super-block: for sub-block i (32 elements), at 64 i: its elements
// 0..15 in both lanes, at 64 i + 32: its elements 16..31 in both lanes; at 512: the 8 sums of
// bsums pairs (one per sub-block) as int16, in both lanes.
inline constexpr size_t kQ4KPairAct = 544;

inline void q4k_pair_prepare(const uint8_t* a, int64_t nb, uint8_t* out) {
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* ab = a + static_cast<size_t>(b) * sizeof(BlockQ8K);
    uint8_t* o = out + static_cast<size_t>(b) * kQ4KPairAct;
    for (int i = 0; i < 8; ++i) {
      const __m256i v = load32(ab + offsetof(BlockQ8K, qs) + 32 * i);
      store32(o + 64 * i, _mm256_permute2x128_si256(v, v, 0x00));
      store32(o + 64 * i + 32, _mm256_permute2x128_si256(v, v, 0x11));
    }
    // |bsum| <= 16 * 127, so pair sums fit int16.
    const __m256i pairs = _mm256_madd_epi16(load32(ab + offsetof(BlockQ8K, bsums)), _mm256_set1_epi16(1));
    store32(o + 512, _mm256_permute4x64_epi64(_mm256_packs_epi32(pairs, pairs), _MM_SHUFFLE(2, 0, 2, 0)));
  }
}

// The first 16 bytes of the two blocks (d, dmin, the 12 packed scale bytes), A in lane 0, B in 1,
// unpacked per lane into bytes [sc0..3, m0..3, sc4..7, m4..7] (the bit layout of k4_scales).
inline __m256i q4k_pair_scales(__m256i head) {
  // [u0, u1, u2, u2 >> 4] (u0 = packed bytes 0..3, at block bytes 4..7): the low parts.
  const __m256i x =
      _mm256_srlv_epi32(_mm256_shuffle_epi32(head, _MM_SHUFFLE(3, 3, 2, 1)), _mm256_setr_epi32(0, 0, 0, 4, 0, 0, 0, 4));
  const __m256i low = _mm256_and_si256(x, _mm256_setr_epi32(0x3f3f3f3f, 0x3f3f3f3f, 0x0f0f0f0f, 0x0f0f0f0f,  //
                                                            0x3f3f3f3f, 0x3f3f3f3f, 0x0f0f0f0f, 0x0f0f0f0f));
  // [., ., u0, u1] >> 2 & 0x30: the top two bits of u0 / u1 as bits 4..5 of sc / m 4..7.
  const __m256i high = _mm256_and_si256(_mm256_srli_epi32(_mm256_bslli_epi128(head, 4), 2),
                                        _mm256_setr_epi32(0, 0, 0x30303030, 0x30303030, 0, 0, 0x30303030, 0x30303030));
  return _mm256_or_si256(low, high);
}

// Sub-block I's scale as 8 int16 words per lane (A's in lane 0, B's in lane 1); kLowWords: in the
// low word of each dword only (the high word 0), to scale int32 sums that fit int16.
template <int I, bool kLowWords = false>
inline __m256i q4k_pair_scale(__m256i sm) {
  constexpr char z = -128, j = I < 4 ? I : I + 4;  // vpshufb: -128 gives a zero byte
  constexpr char h = kLowWords ? z : j;
  return _mm256_shuffle_epi8(sm, _mm256_setr_epi8(j, z, h, z, j, z, h, z, j, z, h, z, j, z, h, z,  //
                                                  j, z, h, z, j, z, h, z, j, z, h, z, j, z, h, z));
}

// Chunk C (quant bytes 32C..32C+31: sub-blocks 2C and 2C+1) of rows A and B: 8 dwords, A's 4
// partial sumi in lane 0, B's in lane 1.
template <int C>
inline __m256i q4k_pair_chunk(const uint8_t* wa, const uint8_t* wb, const uint8_t* act, __m256i sm) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i va = load32(wa + offsetof(BlockQ4K, qs) + 32 * C), vb = load32(wb + offsetof(BlockQ4K, qs) + 32 * C);
  const __m256i x = _mm256_permute2x128_si256(va, vb, 0x20), y = _mm256_permute2x128_si256(va, vb, 0x31);
  const uint8_t* a = act + 128 * C;
  if constexpr (dot256::kVnni) {
    // AVX-VNNI tier: a sub-block's 8 products per dword by two vpdpbusd (|sum| <= 8 * 15 * 128 =
    // 15360: the dword is its low int16 word sign-extended), scaled by vpmaddwd against (scale, 0).
    const __m256i z = _mm256_setzero_si256();
    const __m256i lo = dot256::dpbusd(dot256::dpbusd(z, _mm256_and_si256(x, low4), load32(a)),
                                      _mm256_and_si256(y, low4), load32(a + 32));
    const __m256i hi =
        dot256::dpbusd(dot256::dpbusd(z, _mm256_and_si256(_mm256_srli_epi16(x, 4), low4), load32(a + 64)),
                       _mm256_and_si256(_mm256_srli_epi16(y, 4), low4), load32(a + 96));
    return dot256::dpwssd(_mm256_madd_epi16(lo, q4k_pair_scale<2 * C, true>(sm)), hi,
                          q4k_pair_scale<2 * C + 1, true>(sm));
  }
  const __m256i lo = _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_and_si256(x, low4), load32(a)),
                                      _mm256_maddubs_epi16(_mm256_and_si256(y, low4), load32(a + 32)));
  const __m256i hi =
      _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(x, 4), low4), load32(a + 64)),
                       _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(y, 4), low4), load32(a + 96)));
  return _mm256_add_epi32(_mm256_madd_epi16(lo, q4k_pair_scale<2 * C>(sm)),
                          _mm256_madd_epi16(hi, q4k_pair_scale<2 * C + 1>(sm)));
}

// Rows A and B of one super-block: [sumi_A, sumi_A, summ_A, summ_A | the same of B] (the two
// dwords of each sum add to it); `head` returns the blocks' first 16 bytes (d | dmin << 16 in
// dword 0 of each lane).
inline __m256i q4k_pair(const uint8_t* wa, const uint8_t* wb, const uint8_t* act, __m256i& head) {
  head = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wa))),
                                 _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb)), 1);
  const __m256i sm = q4k_pair_scales(head);
  const __m256i p =
      _mm256_add_epi32(_mm256_add_epi32(q4k_pair_chunk<0>(wa, wb, act, sm), q4k_pair_chunk<1>(wa, wb, act, sm)),
                       _mm256_add_epi32(q4k_pair_chunk<2>(wa, wb, act, sm), q4k_pair_chunk<3>(wa, wb, act, sm)));
  constexpr char z = -128;
  const __m256i mins = _mm256_shuffle_epi8(sm, _mm256_setr_epi8(4, z, 5, z, 6, z, 7, z, 12, z, 13, z, 14, z, 15, z,  //
                                                                4, z, 5, z, 6, z, 7, z, 12, z, 13, z, 14, z, 15, z));
  return _mm256_hadd_epi32(p, _mm256_madd_epi16(mins, load32(act + 512)));
}

// 8 rows starting at w0, w_stride bytes apart (rows past n_rows repeat the last: their byte
// offsets are `row_off`), one token: activations prepared by q4k_pair_prepare (`act`; `a` is the
// Q8_K row itself, for its d); res[r] = row r's result. While on super-block b it prefetches
// super-block b of the next tile's rows, `ahead` bytes after each (prefetch_next_pair).
inline void rowdot_tile_q4k_pairs(int64_t nb, const uint8_t* w0, const size_t* row_off, size_t ahead, const uint8_t* a,
                                  const uint8_t* act, float* res) {
  constexpr size_t kBytes = sizeof(BlockQ4K);
  // Lanes [r0 r2 | r1 r3] of acc0 and [r4 r6 | r5 r7] of acc1, each row as (d * sumi chain,
  // dmin * summ chain).
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* wb = w0 + static_cast<size_t>(b) * kBytes;
    const uint8_t* ab = act + static_cast<size_t>(b) * kQ4KPairAct;
    __m256i h01, h23, h45, h67;
    prefetch_next_pair<kBytes>(wb, row_off, ahead, 0);
    const __m256i r01 = q4k_pair(wb + row_off[0], wb + row_off[1], ab, h01);
    prefetch_next_pair<kBytes>(wb, row_off, ahead, 1);
    const __m256i r23 = q4k_pair(wb + row_off[2], wb + row_off[3], ab, h23);
    prefetch_next_pair<kBytes>(wb, row_off, ahead, 2);
    const __m256i r45 = q4k_pair(wb + row_off[4], wb + row_off[5], ab, h45);
    prefetch_next_pair<kBytes>(wb, row_off, ahead, 3);
    const __m256i r67 = q4k_pair(wb + row_off[6], wb + row_off[7], ab, h67);
    // [d|dmin of r0, r2, r1, r3] and of [r4, r6, r5, r7] as f16 pairs, converted lane-wise.
    const __m256i dd0 = _mm256_permute4x64_epi64(_mm256_unpacklo_epi32(h01, h23), _MM_SHUFFLE(2, 0, 2, 0));
    const __m256i dd1 = _mm256_permute4x64_epi64(_mm256_unpacklo_epi32(h45, h67), _MM_SHUFFLE(2, 0, 2, 0));
    const __m256 da = _mm256_set1_ps(a_scale256(a + static_cast<size_t>(b) * sizeof(BlockQ8K)));
    const __m256 f0 = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(dd0)), da);
    const __m256 f1 = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(dd1)), da);
    acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_hadd_epi32(r01, r23)), f0, acc0);
    acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_hadd_epi32(r45, r67)), f1, acc1);
  }
  alignas(32) float l[16];
  _mm256_store_ps(l, acc0);
  _mm256_store_ps(l + 8, acc1);
  static constexpr int kRow[8] = {0, 2, 1, 3, 4, 6, 5, 7};
  for (int i = 0; i < 8; ++i) res[kRow[i]] = l[2 * i] - l[2 * i + 1];
}

// ---- Q5_K decode: 4-row tiles in llama.cpp's vec_dot lane order -----------------------------
//
// Order::kLanes keeps 8 int32 lanes per row (lane L: positions 4L..4L+3 of every sub-block, each
// sub-block times its scale): a row's 32 quant bytes of chunk C against the plain Q8_K
// activations give exactly those 8 lanes (vpmaddubsw, then vpmaddwd by the sub-block's scale), so
// each row runs on its own and nothing is recombined across 128-bit lanes. The fifth bits: one
// vpsllw/vpsrlw of qh per chunk puts bits 2C and 2C + 1 at bits 4 and 5; sub-block 2C is decoded
// as q (nibble | bit 4), 2C + 1 as 2q (nibble >> 3 & 0x1E | bit 5) and 2C's scale is doubled
// instead, so every lane holds twice its value (all terms even: one vpsrad at the end is exact).
// vpmaddubsw pair sums stay below 2 * 62 * 127 = 15748: no saturation. The scales of two rows
// are unpacked together (q4k_pair_scales) into dwords (s | s << 16) in a small stack buffer that
// vpmaddwd reads through broadcast loads (load pipes, not shuffles). Float steps: lane-wise
// fma(a.d * d, lane, acc_row) per super-block, a dmin * summ chain per row, and ggml's
// hsum_float_8 of each row's lanes + its chain at the end (Order::kLanes): same bits. Spent where
// (Zen 4, one thread, in cache): ~7 ns per row and super-block, the 8 vpmaddubsw + 8 vpmaddwd and
// the ~31 decode instructions dominate.

// Chunk C (quant bytes 32C..32C+31: sub-blocks 2C and 2C+1) of one row: twice its scaled
// products, 8 lanes. aq: the Q8_K quants; qh: the row's 32 qh bytes; sd: the scale dwords of 2C
// (doubled) and 2C + 1.
template <int C>
inline __m256i q5k_row_chunk(const uint8_t* w, const uint8_t* aq, __m256i qh, const int32_t* sd) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), high4x2 = _mm256_set1_epi8(0x1E);
  const __m256i bit4 = _mm256_set1_epi8(0x10), bit5 = _mm256_set1_epi8(0x20);
  const __m256i v = load32(w + offsetof(BlockQ5K, qs) + 32 * C);
  const __m256i g = shift16<4 - 2 * C>(qh);
  const __m256i lo = _mm256_or_si256(_mm256_and_si256(v, low4), _mm256_and_si256(g, bit4));
  const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 3), high4x2), _mm256_and_si256(g, bit5));
  return dot256::dpwssd(_mm256_madd_epi16(_mm256_maddubs_epi16(lo, load32(aq + 64 * C)), _mm256_set1_epi32(sd[0])),
                        _mm256_maddubs_epi16(hi, load32(aq + 64 * C + 32)), _mm256_set1_epi32(sd[1]));
}

// One row's 8 integer lanes of a super-block; s03 / s47: its scale dwords of sub-blocks 0..3 / 4..7.
inline __m256i q5k_row(const uint8_t* w, const uint8_t* aq, const int32_t* s03, const int32_t* s47) {
  const __m256i qh = load32(w + offsetof(BlockQ5K, qh));
  const __m256i p =
      _mm256_add_epi32(_mm256_add_epi32(q5k_row_chunk<0>(w, aq, qh, s03), q5k_row_chunk<1>(w, aq, qh, s03 + 2)),
                       _mm256_add_epi32(q5k_row_chunk<2>(w, aq, qh, s47), q5k_row_chunk<3>(w, aq, qh, s47 + 2)));
  return _mm256_srai_epi32(p, 1);
}

// Rows A and B of a super-block: their scale dwords into sd[16] = [A 0..3, B 0..3, A 4..7, B 4..7]
// (twice the scale for even sub-blocks); `head` returns the blocks' first 16 bytes (d | dmin << 16
// in dword 0 of each lane); returns [summ_A x4 partial | summ_B x4 partial] (act: the prepared
// activations, for their bsum pairs).
inline __m256i q5k_pair_head(const uint8_t* wa, const uint8_t* wb, const uint8_t* act, __m256i& head, int32_t* sd) {
  head = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wa))),
                                 _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb)), 1);
  const __m256i sm0 = q4k_pair_scales(head);  // the first 16 bytes are laid out as Q4_K's
  // The scales of even sub-blocks (bytes 0, 2, 8, 10 of each lane) doubled (<= 126: fits a byte),
  // by an add rather than a shift (the shift pipes are the busy ones here).
  const __m256i sm = _mm256_add_epi8(
      sm0, _mm256_and_si256(sm0, _mm256_setr_epi8(-1, 0, -1, 0, 0, 0, 0, 0, -1, 0, -1, 0, 0, 0, 0, 0,  //
                                                  -1, 0, -1, 0, 0, 0, 0, 0, -1, 0, -1, 0, 0, 0, 0, 0)));
  constexpr char z = -128;  // vpshufb: -128 gives a zero byte
  const __m256i s03 = _mm256_shuffle_epi8(sm, _mm256_setr_epi8(0, z, 0, z, 1, z, 1, z, 2, z, 2, z, 3, z, 3, z,  //
                                                               0, z, 0, z, 1, z, 1, z, 2, z, 2, z, 3, z, 3, z));
  const __m256i s47 = _mm256_shuffle_epi8(sm, _mm256_setr_epi8(8, z, 8, z, 9, z, 9, z, 10, z, 10, z, 11, z, 11, z,  //
                                                               8, z, 8, z, 9, z, 9, z, 10, z, 10, z, 11, z, 11, z));
  _mm256_store_si256(reinterpret_cast<__m256i*>(sd), s03);
  _mm256_store_si256(reinterpret_cast<__m256i*>(sd + 8), s47);
  const __m256i mins = _mm256_shuffle_epi8(sm, _mm256_setr_epi8(4, z, 5, z, 6, z, 7, z, 12, z, 13, z, 14, z, 15, z,  //
                                                                4, z, 5, z, 6, z, 7, z, 12, z, 13, z, 14, z, 15, z));
  return _mm256_madd_epi16(mins, load32(act + 512));
}

inline constexpr int kQ5KTileRows = 4;

// Q5_K for the 4 rows starting at w[0..4) (res[0..4)); `a` is the Q8_K row,
// `act` its bsum pairs as prepared by q4k_pair_prepare; while on super-block b it prefetches the
// bytes `ahead` further of each row (the same super-block of the next tile). Same bits.
inline void rowdot_tile_q5k_rows(int64_t nb, const uint8_t* const* w, size_t ahead, const uint8_t* a,
                                 const uint8_t* act, float* res) {
  constexpr size_t kBytes = sizeof(BlockQ5K);
  // Integer addresses: the prefetched ones may lie past the end of the weights (prefetches never
  // fault, a pointer there would be undefined).
  uintptr_t w0 = reinterpret_cast<uintptr_t>(w[0]), w1 = reinterpret_cast<uintptr_t>(w[1]);
  uintptr_t w2 = reinterpret_cast<uintptr_t>(w[2]), w3 = reinterpret_cast<uintptr_t>(w[3]);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  // Lanes [r0 r2 r0 r2 | r1 r3 r1 r3]: each row's dmin * summ chain.
  __m256 accm = _mm256_setzero_ps();
  const __m256 sign = _mm256_setr_ps(1.0f, -1.0f, 1.0f, -1.0f, 1.0f, -1.0f, 1.0f, -1.0f);
  alignas(32) int32_t sd[2][16];
  alignas(32) float f[8];
  for (int64_t b = 0; b < nb; ++b, w0 += kBytes, w1 += kBytes, w2 += kBytes, w3 += kBytes) {
    for (uintptr_t row : {w0, w1, w2, w3}) prefetch_l2<kBytes>(row + ahead);
    const uint8_t* r0 = reinterpret_cast<const uint8_t*>(w0);
    const uint8_t* r1 = reinterpret_cast<const uint8_t*>(w1);
    const uint8_t* r2 = reinterpret_cast<const uint8_t*>(w2);
    const uint8_t* r3 = reinterpret_cast<const uint8_t*>(w3);
    const uint8_t* ab = act + static_cast<size_t>(b) * kQ4KPairAct;
    const uint8_t* a8 = a + static_cast<size_t>(b) * sizeof(BlockQ8K);
    const uint8_t* aq = a8 + offsetof(BlockQ8K, qs);
    __m256i h01, h23;
    const __m256i m01 = q5k_pair_head(r0, r1, ab, h01, sd[0]);
    const __m256i m23 = q5k_pair_head(r2, r3, ab, h23, sd[1]);
    // (d | dmin << 16) of rows 0 2 1 3 as f16, then f = [d0 dm0 d2 dm2 | d1 dm1 d3 dm3] * (da, -da).
    const __m256i dd = _mm256_permute4x64_epi64(_mm256_unpacklo_epi32(h01, h23), _MM_SHUFFLE(2, 0, 2, 0));
    const __m256 da = _mm256_mul_ps(_mm256_set1_ps(a_scale256(a8)), sign);
    _mm256_store_ps(f, _mm256_mul_ps(da, _mm256_cvtph_ps(_mm256_castsi256_si128(dd))));
    // sd and f are read back by broadcast loads; without this barrier g++ forwards the stores
    // through register permutes (vpermd on the shuffle pipes: measured slower).
    asm volatile("" : : "r"(sd), "r"(f) : "memory");
    acc0 = _mm256_fmadd_ps(_mm256_broadcast_ss(f + 0), _mm256_cvtepi32_ps(q5k_row(r0, aq, sd[0], sd[0] + 8)), acc0);
    acc1 =
        _mm256_fmadd_ps(_mm256_broadcast_ss(f + 4), _mm256_cvtepi32_ps(q5k_row(r1, aq, sd[0] + 4, sd[0] + 12)), acc1);
    acc2 = _mm256_fmadd_ps(_mm256_broadcast_ss(f + 2), _mm256_cvtepi32_ps(q5k_row(r2, aq, sd[1], sd[1] + 8)), acc2);
    acc3 =
        _mm256_fmadd_ps(_mm256_broadcast_ss(f + 6), _mm256_cvtepi32_ps(q5k_row(r3, aq, sd[1] + 4, sd[1] + 12)), acc3);
    // [s0 s0 s2 s2 | s1 s1 s3 s3] halves of summ, then [s0 s2 s0 s2 | s1 s3 s1 s3].
    const __m256i t = _mm256_hadd_epi32(m01, m23);
    const __m256i msum = _mm256_hadd_epi32(t, t);
    accm =
        _mm256_fmadd_ps(_mm256_permute_ps(_mm256_load_ps(f), _MM_SHUFFLE(3, 1, 3, 1)), _mm256_cvtepi32_ps(msum), accm);
  }
  alignas(32) float l[8], mm[8];
  _mm256_store_ps(mm, accm);
  const __m256 accs[4] = {acc0, acc1, acc2, acc3};
  static constexpr int kPos[4] = {0, 4, 1, 5};  // row r's lane in accm
  for (int r = 0; r < 4; ++r) {
    _mm256_store_ps(l, accs[r]);
    res[r] = hsum8_ggml(l) + mm[kPos[r]];
  }
}

// The decode gemm: every tile of rowdot_tile_q4k_pairs (8 rows) / rowdot_tile_q5k_rows (4 rows)
// once per token, the activations of each token prepared once, in this thread's kernel scratch.
// Any row stride.
template <bool kQ5K>
void gemm_rowdot_pairs(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                       int64_t n_tok, float* out, size_t out_stride) {
  constexpr int kTile = kQ5K ? kQ5KTileRows : 8;
  const int64_t nb = k / kQK_K;
  const uint8_t* w8 = static_cast<const uint8_t*>(w);
  uint8_t* act = static_cast<uint8_t*>(detail::thread_scratch(static_cast<size_t>(nb) * kQ4KPairAct));
  for (int64_t t = 0; t < n_tok; ++t) {
    const uint8_t* at = static_cast<const uint8_t*>(a) + static_cast<size_t>(t) * a_stride;
    q4k_pair_prepare(at, nb, act);
    float* ot = out + static_cast<size_t>(t) * out_stride;
    int64_t first_adjacent = 0;
    if constexpr (!kQ5K) {
      // Tile i takes rows i + j q (j = 0..7): eight streams far apart. Eight adjacent rows read
      // side by side ran slower from DRAM (docs/BENCHMARKS.md, Kernel notes).
      const int64_t q = n_rows / kTile;
      size_t far_off[kTile];
      for (int r = 0; r < kTile; ++r) far_off[r] = static_cast<size_t>(r * q) * w_stride;
      for (int64_t i = 0; i < q; ++i) {
        float res[kTile];
        rowdot_tile_q4k_pairs(nb, w8 + static_cast<size_t>(i) * w_stride, far_off, w_stride, at, act, res);
        for (int r = 0; r < kTile; ++r) ot[i + r * q] = res[r];
      }
      first_adjacent = q * kTile;
    }
    for (int64_t r0 = first_adjacent; r0 < n_rows; r0 += kTile) {
      const int64_t nr = std::min<int64_t>(kTile, n_rows - r0);
      size_t row_off[kTile];
      for (int r = 0; r < kTile; ++r) row_off[r] = static_cast<size_t>(std::min<int64_t>(r, nr - 1)) * w_stride;
      float res[kTile];
      if constexpr (kQ5K) {
        const uint8_t* rows[kTile];
        for (int r = 0; r < kTile; ++r) rows[r] = w8 + static_cast<size_t>(r0) * w_stride + row_off[r];
        rowdot_tile_q5k_rows(nb, rows, kTile * w_stride, at, act, res);
      } else
        rowdot_tile_q4k_pairs(nb, w8 + static_cast<size_t>(r0) * w_stride, row_off, kTile * w_stride, at, act, res);
      for (int64_t r = 0; r < nr; ++r) ot[r0 + r] = res[r];
    }
  }
}

}  // namespace
}  // namespace baton::kernels::kq
