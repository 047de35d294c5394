// The AVX2 Q5_K gemm on weights repacked at load into "x16p" groups of 16 rows (repack_q5_k_x16p,
// kquant/q5_K_repack_x16.cpp): the x16 layout of kquant/q5_K_gemm_x16.h (d, dmin, scales, and per lane block
// L five 64-byte units, row j's 4 bytes at + 4 j, rows 0..7 in the low and 8..15 in the high 32
// bytes) with the quant bytes regrouped so that a row's dword holds two sub-blocks:
//   unit 1 + u (u = 0..3), byte k: plain qs byte 32 p + 4 L + s, p = 2 (u / 2) + k / 2,
//   s = 2 (u % 2) + k % 2 (low nibble: sub-block 2p, high nibble: 2p + 1);
//   unit 0 byte k: bit 2u + n = the fifth bit of unit u's byte k, nibble n (n = 0 low, 1 high).
// So the low nibbles of units 0 and 1 together hold positions 4L..4L+3 of sub-blocks 0 (bytes 0,
// 1 of each dword) and 2 (bytes 2, 3): their vpmaddubsw products, added as int16, give each row's
// lane-L sums of both sub-blocks in one dword, and one vpmaddwd by the pair (scale_0, scale_2)
// yields lane L's contribution: 4 vpmaddwd per lane block instead of 8 (the activations are
// permuted to match, once per matmul). One vpsllw / vpsrlw of unit 0 puts unit u's two fifth bits
// at bits 4 and 5; the low nibble decodes as q (| bit 4), the high as 2q (>> 3 & 0x1E | bit 5)
// with the low nibbles' scales doubled instead, so every lane is twice its value (all terms
// even: one vpsrad is exact). int16 bounds: low sums 2 * 2 * 31 * 128 = 15872, high 2 * 2 * 62 *
// 128 = 31744 < 32768. Float steps: those of the x16 kernel (llama.cpp's vec_dot lanes order,
// kquant/kernels.h), lane-wise over 8 rows: the scalar reference's bits.
// Why a repacked AVX2 kernel: the plain-layout 4-row kernel (kquant/q45_K_gemm_rowdot.h) needs ~7 ns per row
// and super-block, about the time its 176 bytes take to arrive from DRAM (72-76 % of the
// read-sum); here the scales, mins and d of 8 rows decode in one vector pass, half the scale
// multiplies go, and a group is one sequential stream: ~5.8 ns in cache (rows-bench --hot), 90-93 %
// of the read-sum from DRAM (kernel-bench matvec, session 14, docs/BENCHMARKS.md).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kquant/blocks.h"
#include "kernels/kquant/q8_K_bsum_pairs.h"
#include "kernels/core/scratch.h"
#include "kernels/kquant/qx_K_x16.h"
#include "kernels/core/prefetch_l2.h"
#include "kernels/core/simd256_tier.h"

namespace baton::kernels::BATON_SIMD256_NS {
namespace {

constexpr int64_t kRows = 16;
constexpr size_t kGroupBlock = 2816;  // bytes of one super-block of a group
constexpr size_t kUnit = 64, kScales = 64, kQuants = 256, kLBlock = 5 * kUnit;
constexpr size_t kHalf = 32;           // bytes of 8 rows in a unit
constexpr size_t kPrefetchBlocks = 2;  // 1: 72-80 %, 3 and 4: no better (kernel-bench matvec)
constexpr size_t kActBlock = 256;      // permuted activation bytes per super-block
constexpr int kMaxTokens = 4;          // tokens per pass over a decoded lane block (not tuned)
static_assert(kGroupBlock == kRows * sizeof(BlockQ5K) && kQuants + 8 * kLBlock == kGroupBlock);

inline __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m256i bcast(int32_t v) { return _mm256_set1_epi32(v); }
inline __m256i bcast_at(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return bcast(v);
}

// 16-bit lane shift by a compile-time count: left for N > 0, right for N < 0.
template <int N>
inline __m256i shift16(__m256i v) {
  if constexpr (N > 0) return _mm256_slli_epi16(v, N);
  else if constexpr (N < 0) return _mm256_srli_epi16(v, -N);
  else return v;
}

// Bytes I0 and I1 (0..3) of each dword of x, zero-extended into its low and high 16 bits.
template <int I0, int I1>
inline __m256i pair16(__m256i x) {
  constexpr char z = static_cast<char>(0x80);
  return _mm256_shuffle_epi8(x, _mm256_setr_epi8(I0, z, I1, z, 4 + I0, z, 4 + I1, z, 8 + I0, z, 8 + I1, z, 12 + I0, z,
                                                 12 + I1, z, I0, z, I1, z, 4 + I0, z, 4 + I1, z, 8 + I0, z, 8 + I1, z,
                                                 12 + I0, z, 12 + I1, z));
}

// Token t's Q8_K quants in the order of the units: per super-block and lane block L, 8 dwords,
// dword 2u + n = the 4 activations of unit u's bytes, nibble n (bytes k, k + 1 are adjacent
// quants: 2-byte moves).
void permute_activations(const uint8_t* a, size_t a_stride, int64_t n_tok, int64_t nb, uint8_t* dst) {
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* q = a + static_cast<size_t>(t) * a_stride + static_cast<size_t>(b) * sizeof(BlockQ8K) +
                         offsetof(BlockQ8K, qs);
      for (int L = 0; L < 8; ++L)
        for (int u = 0; u < 4; ++u)
          for (int n = 0; n < 2; ++n)
            for (int k = 0; k < 4; k += 2, dst += 2) {
              const int pair = 2 * (u / 2) + k / 2, pos = 2 * (u % 2);
              std::memcpy(dst, q + 64 * pair + 32 * n + 4 * L + pos, 2);
            }
    }
}

// One half's per-super-block constants: the sub-block pairs' scale pairs (low nibbles' doubled),
// the mins pairs (m_2P, m_2P+1) and the f16 d / dmin of its 8 rows.
struct HalfScales {
  __m256i lo[2], hi[2], mp[4];
  __m256 dw, dmw;
  HalfScales(const uint8_t* x, size_t h) {
    const __m256i low6 = bcast(0x3F3F3F3F), low4 = bcast(0x0F0F0F0F), top2 = bcast(0x30303030);
    const __m256i u0 = load32(x + kScales + h), u1 = load32(x + kScales + kUnit + h);
    const __m256i u2 = load32(x + kScales + 2 * kUnit + h);
    const __m256i sc_lo = _mm256_and_si256(u0, low6), m_lo = _mm256_and_si256(u1, low6);
    const __m256i sc_hi =
        _mm256_or_si256(_mm256_and_si256(u2, low4), _mm256_and_si256(_mm256_srli_epi32(u0, 2), top2));
    const __m256i m_hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u2, 4), low4),
                                         _mm256_and_si256(_mm256_srli_epi32(u1, 2), top2));
    // (2 sc_0, 2 sc_2), (sc_1, sc_3) from sc_lo; the same for 4..7 from sc_hi
    lo[0] = _mm256_add_epi16(pair16<0, 2>(sc_lo), pair16<0, 2>(sc_lo));
    hi[0] = pair16<1, 3>(sc_lo);
    lo[1] = _mm256_add_epi16(pair16<0, 2>(sc_hi), pair16<0, 2>(sc_hi));
    hi[1] = pair16<1, 3>(sc_hi);
    mp[0] = pair16<0, 1>(m_lo), mp[1] = pair16<2, 3>(m_lo), mp[2] = pair16<0, 1>(m_hi), mp[3] = pair16<2, 3>(m_hi);
    dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + h / 2)));
    dmw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 32 + h / 2)));
  }
};

// Unit U's quants: low nibbles (q) and high nibbles (2q), fifth bits from the qh unit.
template <int U>
inline void decode_unit(__m256i v, __m256i qh, __m256i& lo, __m256i& hi2) {
  const __m256i g = shift16<4 - 2 * U>(qh);
  lo = _mm256_or_si256(_mm256_and_si256(v, bcast(0x0F0F0F0F)), _mm256_and_si256(g, bcast(0x10101010)));
  hi2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 3), bcast(0x1E1E1E1E)),
                        _mm256_and_si256(g, bcast(0x20202020)));
}

// Twice lane L's integer sum for 8 rows: q = the 8 decoded vectors (unit u: q[2u] low, q[2u + 1]
// high), ap = the lane block's 8 permuted activation dwords.
inline __m256i lane_sum(const __m256i (&q)[8], const uint8_t* ap, const HalfScales& s) {
  __m256i sum = _mm256_setzero_si256();
#pragma GCC unroll 2
  for (int p = 0; p < 2; ++p) {
    const uint8_t* a = ap + 16 * p;  // units 2p and 2p + 1
    const __m256i l16 = _mm256_add_epi16(_mm256_maddubs_epi16(q[4 * p], bcast_at(a)),
                                         _mm256_maddubs_epi16(q[4 * p + 2], bcast_at(a + 8)));
    const __m256i h16 = _mm256_add_epi16(_mm256_maddubs_epi16(q[4 * p + 1], bcast_at(a + 4)),
                                         _mm256_maddubs_epi16(q[4 * p + 3], bcast_at(a + 12)));
    sum = dot256::dpwssd(dot256::dpwssd(sum, l16, s.lo[p]), h16, s.hi[p]);
  }
  return sum;
}

// NT tokens x one group: out[t][0..15]. Both halves of each super-block in turn, so that the
// group streams from DRAM at an even rate (a pass per half left memory idle during the second).
// act[t]: token t's permuted activations; sp[t]: its bsum pairs.
template <int NT>
void group_tokens(int64_t nb, const uint8_t* g, const uint8_t* const* act, const float* const* da,
                  const uint32_t* const* sp, float* const* out) {
  __m256 acc[2][NT][8], summs[2][NT];
  for (int h = 0; h < 2; ++h)
    for (int t = 0; t < NT; ++t) {
      for (auto& v : acc[h][t]) v = _mm256_setzero_ps();
      summs[h][t] = _mm256_setzero_ps();
    }
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* x = g + static_cast<size_t>(b) * kGroupBlock;
    // The block kPrefetchBlocks ahead into L1, spread over the lane blocks (a burst of its 44
    // lines at the block start: 64-87 % of the read-sum; spread: 84-116 %, kernel-bench matvec).
    const uintptr_t ahead = reinterpret_cast<uintptr_t>(x) + kPrefetchBlocks * kGroupBlock;
    prefetch_l1<kQuants>(ahead);
    for (int h = 0; h < 2; ++h) {
      const HalfScales s(x, kHalf * static_cast<size_t>(h));
      __m256 d[NT];
      for (int t = 0; t < NT; ++t) {
        const float dt = da[t][b];
        const uint32_t* pairs = sp[t] + static_cast<size_t>(b) * kBsumPairsPerBlock;
        __m256i summ = _mm256_setzero_si256();
        for (int p = 0; p < kBsumPairsPerBlock; ++p)
          summ = dot256::dpwssd(summ, s.mp[p], bcast(static_cast<int32_t>(pairs[p])));
        d[t] = _mm256_mul_ps(s.dw, _mm256_set1_ps(dt));
        summs[h][t] =
            _mm256_fmadd_ps(_mm256_mul_ps(s.dmw, _mm256_set1_ps(-dt)), _mm256_cvtepi32_ps(summ), summs[h][t]);
      }
      const uint8_t* blocks = x + kQuants + kHalf * static_cast<size_t>(h);
#pragma GCC unroll 8
      for (int L = 0; L < 8; ++L) {
        const uint8_t* blk = blocks + static_cast<size_t>(L) * kLBlock;
        if (h == 0) prefetch_l1<kLBlock>(ahead + kQuants + static_cast<size_t>(L) * kLBlock);
        const __m256i qh = load32(blk);
        __m256i q[8];
        decode_unit<0>(load32(blk + kUnit), qh, q[0], q[1]);
        decode_unit<1>(load32(blk + 2 * kUnit), qh, q[2], q[3]);
        decode_unit<2>(load32(blk + 3 * kUnit), qh, q[4], q[5]);
        decode_unit<3>(load32(blk + 4 * kUnit), qh, q[6], q[7]);
        for (int t = 0; t < NT; ++t) {
          const __m256i lane = lane_sum(q, act[t] + static_cast<size_t>(b) * kActBlock + 32 * L, s);
          acc[h][t][L] = _mm256_fmadd_ps(d[t], _mm256_cvtepi32_ps(_mm256_srai_epi32(lane, 1)), acc[h][t][L]);
        }
      }
    }
  }
  for (int h = 0; h < 2; ++h)
    for (int t = 0; t < NT; ++t) {
      // ggml's hsum_float_8, lane-wise: (x0 + x4) ..., then (s0 + s2) + (s1 + s3); + summs
      const __m256* l = acc[h][t];
      const __m256 s0 = _mm256_add_ps(l[4], l[0]), s1 = _mm256_add_ps(l[5], l[1]);
      const __m256 s2 = _mm256_add_ps(l[6], l[2]), s3 = _mm256_add_ps(l[7], l[3]);
      const __m256 hs = _mm256_add_ps(_mm256_add_ps(s0, s2), _mm256_add_ps(s1, s3));
      _mm256_storeu_ps(out[t] + 8 * h, _mm256_add_ps(hs, summs[h][t]));
    }
}

// Per-token inputs of a gemm call: permuted activations, Q8_K d per super-block, bsum pairs.
struct TokenInputs {
  const uint8_t* act;
  const float* da;
  const uint32_t* sp;
  int64_t nb;
  const uint8_t* act_of(int64_t t) const { return act + static_cast<size_t>(t * nb) * kActBlock; }
  const float* da_of(int64_t t) const { return da + t * nb; }
  const uint32_t* sp_of(int64_t t) const { return sp + static_cast<size_t>(t * nb) * kBsumPairsPerBlock; }
};

// Prepares the TokenInputs of activation rows, reused across the row chunks of one matmul
// (detail::PreparedActivations).
class InputPreparer {
 public:
  TokenInputs prepare(const uint8_t* a, size_t a_stride, int64_t n_tok, int64_t nb) {
    if (!prepared_.same_as_last(a, a_stride, n_tok, nb)) {
      const auto blocks = static_cast<size_t>(n_tok * nb);
      act_.resize(blocks * kActBlock);
      da_.resize(blocks);
      sp_.resize(blocks * kBsumPairsPerBlock);
      permute_activations(a, a_stride, n_tok, nb, act_.data());
      for (int64_t t = 0; t < n_tok; ++t)
        for (int64_t b = 0; b < nb; ++b) {
          const uint8_t* block = a + static_cast<size_t>(t) * a_stride + static_cast<size_t>(b) * sizeof(BlockQ8K);
          std::memcpy(&da_[static_cast<size_t>(t * nb + b)], block + offsetof(BlockQ8K, d), sizeof(float));
        }
      bsum_pairs(a, a_stride, n_tok, nb, sp_.data());
    }
    return {act_.data(), da_.data(), sp_.data(), nb};
  }

 private:
  detail::PreparedActivations prepared_;  // what the arrays hold
  std::vector<uint8_t> act_;
  std::vector<float> da_;
  std::vector<uint32_t> sp_;
};

template <int NT>
void group_pass(const TokenInputs& in, const uint8_t* g, int64_t t0, float* out, size_t out_stride) {
  const uint8_t* act[NT];
  const float* da[NT];
  const uint32_t* sp[NT];
  float* op[NT];
  for (int t = 0; t < NT; ++t) {
    act[t] = in.act_of(t0 + t);
    da[t] = in.da_of(t0 + t);
    sp[t] = in.sp_of(t0 + t);
    op[t] = out + static_cast<size_t>(t0 + t) * out_stride;
  }
  group_tokens<NT>(in.nb, g, act, da, sp, op);
}

}  // namespace

void gemm_q5_k_x16p(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                    int64_t n_tok, float* out, size_t out_stride) {
  const int64_t nb = k / kQK_K;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  thread_local InputPreparer preparer;
  const TokenInputs in = preparer.prepare(ab, a_stride, n_tok, nb);
  for (int64_t r0 = 0; r0 + kRows <= n_rows; r0 += kRows) {
    const uint8_t* g = wb + static_cast<size_t>(r0) * w_stride;
    float* o = out + r0;
    int64_t t = 0;
    for (; n_tok - t >= kMaxTokens; t += kMaxTokens) group_pass<kMaxTokens>(in, g, t, o, out_stride);
    if (n_tok - t >= 2) {
      group_pass<2>(in, g, t, o, out_stride);
      t += 2;
    }
    if (n_tok - t >= 1) group_pass<1>(in, g, t, o, out_stride);
  }
}

}  // namespace baton::kernels::BATON_SIMD256_NS
