// The Q6_K gemm on weights repacked at load into groups of 16 rows (repack_q6_k_x16,
// kquant_q6k_repack.cpp), in the order of TypeOps::gemm for Q6_K (llama.cpp's AVX2
// ggml_vec_dot_q6_K_q8_K as compiled, docs/NUMERICS.md "Q2_K / Q3_K / Q6_K"): per output 8 float
// lanes, per super-block the exact int32
//   lane_L = Σ_c sc(2c + L/4) · D(c, L) − 32 · (sc(2L) · bsums[2L] + sc(2L + 1) · bsums[2L + 1])
// (D(c, L) = the dot of the 4 unsigned 0..63 quants and activations at 32c + 4L .. +3), then
// acc_L = fma(a.d * f16(w.d), float(lane_L), acc_L); result ggml's hsum_float_8. The integer
// sums are exact (any order gives the same bits); every float step is the reference's,
// lane-wise over the 16 rows.
//
// Chunks go in pairs (m, 4 + m), m = 0..3: the same nibble half and qh bits of ql / qh bytes 64
// (ql) or 32 (qh) apart. Layout of one group (16 rows; the same 16 * 210 bytes per super-block as
// the plain rows), super-block b at 3360 b, offsets for even b (odd b: d first at [0, 32), the
// rest 32 bytes later, so that every 64-byte unit stays aligned as 3360 = 52.5 * 64; measured
// kernel-bench one-token matvec ~75 -> ~79 % of the read-sum):
//   [64 u, +64)    u = 0..3: row j's scale bytes 4u..4u+3 at + 4 j
//   [256 + 384 L + 192 h, +192)  L = 0..7, h = 0, 1: three 64-byte units holding 8 rows
//                  r = 4 (i / 2) + 2 h + i % 2 (slot i = 0..7), each row in two dwords (2i, 2i + 1):
//                  unit 0: ql bytes 4L.. / 64 + 4L..  (low nibbles: chunks 0 / 4, high: 2 / 6)
//                  unit 1: ql bytes 32 + 4L.. / 96 + 4L.. (low: chunks 1 / 5, high: 3 / 7)
//                  unit 2: qh bytes 4L.. / 32 + 4L..  (bits 2m, 2m + 1: chunk m / 4 + m)
//   [3328, 3360)   d of rows 0..15 (f16)
// One vpdpbusd per half against the broadcast qword of a token's activation bytes (chunk m at
// 4L, chunk 4 + m at 4L) gives dwords (D(m, L), D(4 + m, L)) per row; vpackssdw of the two halves
// puts the pair of row j, as int16 (|D| <= 4 * 63 * 128 < 2^15), in dword j (the slot order above
// is chosen so); one vpdpwssd with the rows' (sc(2m + L/4), sc(8 + 2m + L/4)) pairs adds both
// chunks' scaled sums to lane L, and one more against (-32 sc(2L), -32 sc(2L + 1)) the bsum term.
// The weights are decoded once per L block for all tokens of a pass (up to 8). AVX-512 VNNI only.
// Per token and 16 rows x super-block: 64 vpdpbusd + 32 vpackssdw + 40 vpdpwssd, the same integer
// work as the plain-row token-pair kernel (q6k_rows_vnni_avx512.cpp); what the layout saves is the
// per-row decode and scale unpacking, shared here by 16 rows and all tokens of a pass.
// Included by q6k_x16_vnni_avx512.cpp; internal linkage.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/blocks_k.h"

#ifndef __AVX512F__
#error "kquant_q6k_x16.h is built for AVX-512 (with the avx512vnni target pragma) only"
#endif

namespace baton::kernels {
namespace {  // NOLINT: internal linkage per ISA translation unit
namespace q6k_x16 {

constexpr int64_t kRows = 16;
constexpr size_t kGroupBlock = 3360;  // bytes of one super-block of a group
constexpr size_t kUnit = 64, kQuants = 256, kLBlock = 6 * kUnit, kD = kQuants + 8 * kLBlock;
// Passes of 2+ tokens prefetch the weights this many super-blocks (67 KB) ahead into L2
// (_MM_HINT_T1); rows-bench (one thread, 3 alternated runs each), output 32000x2048 8 tokens:
// no prefetch 8.8 ms, 6 ahead 7.0, 12 ahead 6.1-6.3, 20 ahead 6.1-6.2; at 2 tokens 6 ahead cost
// 2.9 -> 4.2 ms, 20 ahead nothing. One token prefetches nothing (kernel-bench matvec: 6 or 20 ahead
// 75 -> 60 % of the read-sum).
constexpr size_t kPrefetchBlocks = 20;
constexpr int kPrefetchMinTokens = 2;
constexpr int kMaxTokens = 8;  // tokens per pass over a decoded L block
static_assert(kGroupBlock == kRows * sizeof(BlockQ6K) && kD + 32 == kGroupBlock);

inline int32_t load_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline __m512i load_unit(const uint8_t* p) { return _mm512_loadu_si512(p); }
inline __m512i bcast(int32_t v) { return _mm512_set1_epi32(v); }

// a | (b & m)
inline __m512i or_and(__m512i a, __m512i b, __m512i m) { return _mm512_ternarylogic_epi32(a, b, m, 0xF8); }

// Per dword, byte I of x at byte 1 and byte J at byte 3 (bytes 0, 2 zero): int16 x[I] << 8, x[J] << 8.
template <int I, int J>
inline __m512i hi_bytes(__m512i x) {
  constexpr char z = static_cast<char>(0x80);
  const __m128i idx = _mm_setr_epi8(z, I, z, J, z, 4 + I, z, 4 + J, z, 8 + I, z, 8 + J, z, 12 + I, z, 12 + J);
  return _mm512_shuffle_epi8(x, _mm512_broadcast_i32x4(idx));
}
// Byte I of lo at byte 1 and byte I of hi at byte 3, as hi_bytes.
template <int I>
inline __m512i hi_bytes2(__m512i lo, __m512i hi) {
  constexpr char z = static_cast<char>(0x80);
  const __m128i a = _mm_setr_epi8(z, I, z, z, z, 4 + I, z, z, z, 8 + I, z, z, z, 12 + I, z, z);
  const __m128i b = _mm_setr_epi8(z, z, z, I, z, z, z, 4 + I, z, z, z, 8 + I, z, z, z, 12 + I);
  return _mm512_or_si512(_mm512_shuffle_epi8(lo, _mm512_broadcast_i32x4(a)),
                         _mm512_shuffle_epi8(hi, _mm512_broadcast_i32x4(b)));
}

// A super-block's scale operands, shared by every token of the pass: sp[s] (s = 0..7) dword j =
// row j's (sc(s), sc(8 + s)) as int16; corr[L] = (-32 sc(2L), -32 sc(2L + 1)).
struct Scales {
  __m512i sp[8], corr[8];
  explicit Scales(const uint8_t* x) {
    const __m512i u[4] = {load_unit(x), load_unit(x + kUnit), load_unit(x + 2 * kUnit), load_unit(x + 3 * kUnit)};
    sp[0] = _mm512_srai_epi16(hi_bytes2<0>(u[0], u[2]), 8);
    sp[1] = _mm512_srai_epi16(hi_bytes2<1>(u[0], u[2]), 8);
    sp[2] = _mm512_srai_epi16(hi_bytes2<2>(u[0], u[2]), 8);
    sp[3] = _mm512_srai_epi16(hi_bytes2<3>(u[0], u[2]), 8);
    sp[4] = _mm512_srai_epi16(hi_bytes2<0>(u[1], u[3]), 8);
    sp[5] = _mm512_srai_epi16(hi_bytes2<1>(u[1], u[3]), 8);
    sp[6] = _mm512_srai_epi16(hi_bytes2<2>(u[1], u[3]), 8);
    sp[7] = _mm512_srai_epi16(hi_bytes2<3>(u[1], u[3]), 8);
    const __m512i zero = _mm512_setzero_si512();
    // (sc << 8) >> 3 = 32 sc, exact; then negated
    for (int v = 0; v < 4; ++v) {
      corr[2 * v] = _mm512_sub_epi16(zero, _mm512_srai_epi16(hi_bytes<0, 1>(u[v]), 3));
      corr[2 * v + 1] = _mm512_sub_epi16(zero, _mm512_srai_epi16(hi_bytes<2, 3>(u[v]), 3));
    }
  }
};

// The 0..63 quants of lane block L: q[2m + h] = pair m (chunks m, 4 + m) of half h.
inline void decode_block(const uint8_t* blk, __m512i (&q)[8]) {
  const __m512i low4 = bcast(0x0F0F0F0F), top2 = bcast(0x30303030);
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    const uint8_t* p = blk + 3 * kUnit * static_cast<size_t>(h);
    const __m512i qa = load_unit(p), qb = load_unit(p + kUnit), qh = load_unit(p + 2 * kUnit);
    q[0 + h] = or_and(_mm512_and_si512(qa, low4), _mm512_slli_epi16(qh, 4), top2);
    q[2 + h] = or_and(_mm512_and_si512(qb, low4), _mm512_slli_epi16(qh, 2), top2);
    q[4 + h] = or_and(_mm512_and_si512(_mm512_srli_epi16(qa, 4), low4), qh, top2);
    q[6 + h] = or_and(_mm512_and_si512(_mm512_srli_epi16(qb, 4), low4), _mm512_srli_epi16(qh, 2), top2);
  }
}

// One token's activations, super-block b: qword 4L + m = (qs[32m + 4L..+3], qs[128 + 32m + 4L..+3]).
using ActBlock = uint64_t[32];

inline void arrange_acts(const uint8_t* a, int64_t nb, uint64_t* dst) {
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* qs = a + static_cast<size_t>(b) * sizeof(BlockQ8K) + offsetof(BlockQ8K, qs);
    uint64_t* d = dst + 32 * b;
    for (int L = 0; L < 8; ++L)
      for (int m = 0; m < 4; ++m) {
        uint32_t lo, hi;
        std::memcpy(&lo, qs + 32 * m + 4 * L, 4);
        std::memcpy(&hi, qs + 128 + 32 * m + 4 * L, 4);
        d[4 * L + m] = lo | (static_cast<uint64_t>(hi) << 32);
      }
  }
}

// Super-block b of group g (x = its bytes) for NT tokens: acc[t][L] += its lane L.
template <int NT>
__attribute__((always_inline)) inline void block_step(int64_t b, const uint8_t* x, const uint8_t* const* a,
                                                      const uint64_t* const* aa, __m512 (&acc)[NT][8]) {
  const __m512i zero = _mm512_setzero_si512();
  if constexpr (NT >= kPrefetchMinTokens) {
#pragma GCC unroll 53
    for (size_t line = 0; line < kGroupBlock; line += 64)
      _mm_prefetch(reinterpret_cast<const char*>(x + kPrefetchBlocks * kGroupBlock + line), _MM_HINT_T1);
  }
  const size_t sc0 = (b & 1) ? 32 : 0;  // odd super-blocks: d first (64-byte aligned units)
  const Scales sc(x + sc0);
  const __m512 dw =
      _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + ((b & 1) ? 0 : kD))));
  __m512 d[NT];
  const uint8_t* bs[NT];
  const uint64_t* ab[NT];
  for (int t = 0; t < NT; ++t) {
    const uint8_t* q8 = a[t] + static_cast<size_t>(b) * sizeof(BlockQ8K);
    float da;
    std::memcpy(&da, q8 + offsetof(BlockQ8K, d), 4);
    d[t] = _mm512_mul_ps(_mm512_set1_ps(da), dw);
    bs[t] = q8 + offsetof(BlockQ8K, bsums);
    ab[t] = aa[t] + 32 * b;
  }
#pragma GCC unroll 8
  for (int L = 0; L < 8; ++L) {
    __m512i q[8];
    decode_block(x + sc0 + kQuants + static_cast<size_t>(L) * kLBlock, q);
    for (int t = 0; t < NT; ++t) {
      __m512i pair[4];
#pragma GCC unroll 4
      for (int m = 0; m < 4; ++m) {
        const __m512i av = _mm512_set1_epi64(static_cast<long long>(ab[t][4 * L + m]));
        const __m512i lo = _mm512_dpbusd_epi32(zero, q[2 * m], av);
        const __m512i hi = _mm512_dpbusd_epi32(zero, q[2 * m + 1], av);
        pair[m] = _mm512_packs_epi32(lo, hi);
      }
      __m512i lane = _mm512_dpwssd_epi32(zero, sc.corr[L], bcast(load_i32(bs[t] + 4 * L)));
#pragma GCC unroll 4
      for (int m = 0; m < 4; ++m) lane = _mm512_dpwssd_epi32(lane, pair[m], sc.sp[2 * m + L / 4]);
      acc[t][L] = _mm512_fmadd_ps(d[t], _mm512_cvtepi32_ps(lane), acc[t][L]);
    }
  }
}

// acc[t] (ggml's hsum_float_8 lane-wise: ((x0 + x4) + (x2 + x6)) + ((x1 + x5) + (x3 + x7))) to out.
inline void store_sums(const __m512 (&acc)[8], float* out) {
  const __m512 s0 = _mm512_add_ps(acc[0], acc[4]), s1 = _mm512_add_ps(acc[1], acc[5]);
  const __m512 s2 = _mm512_add_ps(acc[2], acc[6]), s3 = _mm512_add_ps(acc[3], acc[7]);
  _mm512_storeu_ps(out, _mm512_add_ps(_mm512_add_ps(s0, s2), _mm512_add_ps(s1, s3)));
}

// NT tokens (Q8_K rows a[t], arranged activations aa[t]) x one 16-row group g: out[t][0..15].
template <int NT>
void group_tokens(int64_t nb, const uint8_t* g, const uint8_t* const* a, const uint64_t* const* aa,
                  float* const* out) {
  __m512 acc[NT][8];
  for (int t = 0; t < NT; ++t)
    for (auto& v : acc[t]) v = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) block_step<NT>(b, g + static_cast<size_t>(b) * kGroupBlock, a, aa, acc);
  for (int t = 0; t < NT; ++t) store_sums(acc[t], out[t]);
}

template <int NT>
void group_pass(int64_t nb, const uint8_t* g, const uint8_t* a, size_t a_stride, const uint64_t* aa, int64_t t0,
                float* out, size_t out_stride) {
  const uint8_t* ap[NT];
  const uint64_t* aap[NT];
  float* op[NT];
  for (int t = 0; t < NT; ++t) {
    ap[t] = a + static_cast<size_t>(t0 + t) * a_stride;
    aap[t] = aa + static_cast<size_t>(t0 + t) * 32 * static_cast<size_t>(nb);
    op[t] = out + static_cast<size_t>(t0 + t) * out_stride;
  }
  group_tokens<NT>(nb, g, ap, aap, op);
}

// The gemm on repacked weights: n_rows a multiple of 16, w = the first group, groups
// 16 * w_stride bytes apart (w_stride = the dense row bytes). Activations are arranged once per
// call; per group, tokens in passes of 8, then 4, 2, 1 (the group stays in cache between passes).
inline void gemm(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                 int64_t n_tok, float* out, size_t out_stride) {
  const int64_t nb = k / kQK_K;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  thread_local std::vector<uint64_t> arranged;
  arranged.resize(static_cast<size_t>(n_tok * nb) * 32);
  for (int64_t t = 0; t < n_tok; ++t)
    arrange_acts(ab + static_cast<size_t>(t) * a_stride, nb, arranged.data() + static_cast<size_t>(t * nb) * 32);
  const uint64_t* aa = arranged.data();
  for (int64_t r0 = 0; r0 + kRows <= n_rows; r0 += kRows) {
    const uint8_t* g = wb + static_cast<size_t>(r0) * w_stride;
    float* o = out + r0;
    int64_t t = 0;
    for (; n_tok - t >= kMaxTokens; t += kMaxTokens) group_pass<kMaxTokens>(nb, g, ab, a_stride, aa, t, o, out_stride);
    if (n_tok - t >= 4) {
      group_pass<4>(nb, g, ab, a_stride, aa, t, o, out_stride);
      t += 4;
    }
    if (n_tok - t >= 2) {
      group_pass<2>(nb, g, ab, a_stride, aa, t, o, out_stride);
      t += 2;
    }
    if (n_tok - t >= 1) group_pass<1>(nb, g, ab, a_stride, aa, t, o, out_stride);
  }
}

}  // namespace q6k_x16
}  // namespace
}  // namespace baton::kernels
