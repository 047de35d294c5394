// The Q4_K gemm on weights repacked at load into groups of 16 rows (repack_q4_k_x16,
// kquant/q4_K_repack_x16.cpp), in llama.cpp's repacked q4_K GEMV order (the order of TypeOps::gemm
// for Q4_K, kquant/kernels.h): per output two float chains, one step per super-block,
//   acc = fma(float(sumi), d_w * d_a, acc), accm = fma(float(summ), dmin_w * d_a, accm),
// result acc - accm, with sumi = Σ_j sc_j Σ q a and summ = Σ_j m_j (bsums[2j] + bsums[2j+1])
// exact integers (any summation order gives the same bits).
//
// Layout of one group (16 rows; the same 16 * 144 bytes per super-block as the plain rows),
// super-block b at 2304 b:
//   [0, 32)        d of rows 0..15 (f16)          [32, 64)   dmin of rows 0..15 (f16)
//   [64 + 64 u, +64)  u = 0, 1, 2: bytes 4u..4u+3 of row j's 12 packed scale bytes at + 4 j
//   [256 + 64 (8 c + q), +64)  c = 0..3, q = 0..7: bytes 32c + 4q .. +3 of row j's qs at + 4 j
//                  (low nibbles: elements 64c + 4q.., sub-block 2c; high: 64c + 32 + 4q.., 2c + 1)
// Lane j of every 64-byte unit is row j: one dpbusd (or maddubs) per unit and nibble half
// against 4 broadcast activation bytes, the 6-bit scales and mins unpacked lane-wise by shifts,
// no transposes, one sequential stream per group. AVX-512 only: an AVX2 build measured slower than
// the plain-layout AVX2 kernel, so AVX2 keeps Q4_K unrepacked (docs/BENCHMARKS.md, Kernel notes).
//
// Without VNNI the 8 maddubs results of a sub-block are summed in int16: 16 products of at most
// 15 * 128 per int16 lane, |sum| <= 30720, exact. With several tokens the VNNI kernel keeps the
// same bound: two dpbusd chains of 16 products each, scaled by one vpdpwssd on their int16 pairs.
// Included by q4_K_gemm_x16_{avx512,avx512vnni}.cpp; internal linkage per ISA.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/kquant/blocks.h"
#include "kernels/kquant/q8_K_bsum_pairs.h"
#include "kernels/core/scratch.h"
#include "kernels/core/prefetch_l2.h"

namespace baton::kernels {
namespace {  // NOLINT: one copy per ISA translation unit (different -march), never shared
namespace q4k_x16 {

constexpr int64_t kRows = 16;
constexpr size_t kGroupBlock = 2304;  // bytes of one super-block of a group
constexpr size_t kScales = 64, kQuants = 256;
// Weights are prefetched (T0) this many super-blocks ahead, spread over the kernel's steps (the 4
// header lines first, then each unit pair's 8 lines before its sub-block pair); only a group's first
// token pass prefetches. Why these choices: docs/BENCHMARKS.md, Kernel notes.
constexpr size_t kPrefetchBlocks = 2;
constexpr size_t kPairBytes = 8 * 64;  // the 8 units of sub-blocks 2C and 2C + 1

inline int32_t load_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// 512-bit vector helpers: one 16-row pass per group.
#ifndef __AVX512F__
#error "kquant/q4_K_gemm_x16.h is built for AVX-512 only"
#endif
using VecI = __m512i;
using VecF = __m512;
inline VecI load_unit(const uint8_t* p) { return _mm512_loadu_si512(p); }
inline VecI bcast_i32(int32_t v) { return _mm512_set1_epi32(v); }
inline VecI zero_i() { return _mm512_setzero_si512(); }
inline VecI and_i(VecI a, VecI b) { return _mm512_and_si512(a, b); }
inline VecI or_i(VecI a, VecI b) { return _mm512_or_si512(a, b); }
inline VecI add_i32(VecI a, VecI b) { return _mm512_add_epi32(a, b); }
inline VecI add_i16(VecI a, VecI b) { return _mm512_add_epi16(a, b); }
inline VecI mul_i32(VecI a, VecI b) { return _mm512_mullo_epi32(a, b); }
inline VecI srli16_4(VecI a) { return _mm512_srli_epi16(a, 4); }
template <int N>
inline VecI srli32(VecI a) {
  return _mm512_srli_epi32(a, N);
}
inline VecI maddubs(VecI u, VecI s) { return _mm512_maddubs_epi16(u, s); }
inline VecI madd_ones(VecI a) { return _mm512_madd_epi16(a, _mm512_set1_epi16(1)); }
template <bool kVnni>
inline VecI dot(VecI acc, VecI u, VecI s) {
  if constexpr (kVnni) return _mm512_dpbusd_epi32(acc, u, s);
  else return acc;  // unused
}
// dot<true>(acc, u, the 4 signed bytes at s broadcast), with the broadcast as vpdpbusd's embedded
// {1to16} memory operand: g++ emits a separate vpbroadcastd for the intrinsic (faster on Zen 5 for
// the decode pass; the grouped prompt pass keeps the separate broadcast: docs/BENCHMARKS.md).
inline VecI dot_bcast(VecI acc, VecI u, const uint8_t* s) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*reinterpret_cast<const int32_t*>(s)));
  return acc;
}
// acc + the int16 pair products of a and b summed per dword (vpdpwssd with VNNI).
template <bool kVnni>
inline VecI madd_add(VecI acc, VecI a, VecI b) {
  if constexpr (kVnni) return _mm512_dpwssd_epi32(acc, a, b);
  else return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
}
inline VecF load_f16x(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline VecF set1_f(float v) { return _mm512_set1_ps(v); }
inline VecF zero_f() { return _mm512_setzero_ps(); }
inline VecF fmadd(VecF a, VecF b, VecF c) { return _mm512_fmadd_ps(a, b, c); }
inline VecF mul_f(VecF a, VecF b) { return _mm512_mul_ps(a, b); }
inline VecF cvt(VecI a) { return _mm512_cvtepi32_ps(a); }
inline void store_result(float* out, VecF acc, VecF accm) { _mm512_storeu_ps(out, _mm512_sub_ps(acc, accm)); }

// Lanes' 6-bit scale (kMin = false) or min of sub-block J from the packed words u0, u1, u2.
template <int J, bool kMin>
inline VecI scale_of(VecI u0, VecI u1, VecI u2) {
  const VecI lowbits = kMin ? u1 : u0;
  if constexpr (J < 4) {
    return and_i(srli32<8 * J>(lowbits), bcast_i32(63));
  } else {
    constexpr int I = J - 4;
    return or_i(and_i(srli32<8 * I + (kMin ? 4 : 0)>(u2), bcast_i32(0x0F)),
                and_i(srli32<8 * I + 2>(lowbits), bcast_i32(0x30)));
  }
}

// Lane-wise Σ q a over sub-blocks 2C (lo) and 2C + 1 (hi) of a super-block, from the pair's 8
// units (activations aq = the Q8_K block's qs). VNNI: dpbusd; else maddubs summed in int16.
template <bool kVnni, int C>
inline void pair_sums(const uint8_t* units, size_t unit_stride, const uint8_t* aq, VecI& lo, VecI& hi) {
  VecI slo = zero_i(), shi = zero_i();
#pragma GCC unroll 8
  for (int q = 0; q < 8; ++q) {
    const VecI v = load_unit(units + static_cast<size_t>(8 * C + q) * unit_stride);
    const VecI nib = bcast_i32(0x0F0F0F0F);
    const VecI l = and_i(v, nib), h = and_i(srli16_4(v), nib);
    if constexpr (kVnni) {
      slo = dot_bcast(slo, l, aq + 64 * C + 4 * q);
      shi = dot_bcast(shi, h, aq + 64 * C + 32 + 4 * q);
    } else {
      const VecI alo = bcast_i32(load_i32(aq + 64 * C + 4 * q)), ahi = bcast_i32(load_i32(aq + 64 * C + 32 + 4 * q));
      slo = add_i16(slo, maddubs(l, alo));
      shi = add_i16(shi, maddubs(h, ahi));
    }
  }
  if constexpr (kVnni) {
    lo = slo;
    hi = shi;
  } else {
    lo = madd_ones(slo);
    hi = madd_ones(shi);
  }
}

// One 16-row group x one token.
template <bool kVnni>
void group_token(int64_t nb, const uint8_t* g, const uint8_t* a, float* out) {
  constexpr size_t kUnit = 64;
  VecF acc = zero_f(), accm = zero_f();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* x = g + static_cast<size_t>(b) * kGroupBlock;
    const uintptr_t ahead = reinterpret_cast<uintptr_t>(x) + kPrefetchBlocks * kGroupBlock;
    prefetch_l1<kQuants>(ahead);
    const uint8_t* ab = a + static_cast<size_t>(b) * sizeof(BlockQ8K);
    const uint8_t* aq = ab + offsetof(BlockQ8K, qs);
    int16_t bs[16];
    std::memcpy(bs, ab + offsetof(BlockQ8K, bsums), sizeof bs);
    float da;
    std::memcpy(&da, ab + offsetof(BlockQ8K, d), 4);
    const VecI u0 = load_unit(x + kScales), u1 = load_unit(x + kScales + kUnit),
               u2 = load_unit(x + kScales + 2 * kUnit);
    const uint8_t* units = x + kQuants;
    VecI l0, h0, l1, h1, l2, h2, l3, h3;
    prefetch_l1<kPairBytes>(ahead + kQuants);
    pair_sums<kVnni, 0>(units, kUnit, aq, l0, h0);
    prefetch_l1<kPairBytes>(ahead + kQuants + kPairBytes);
    pair_sums<kVnni, 1>(units, kUnit, aq, l1, h1);
    prefetch_l1<kPairBytes>(ahead + kQuants + 2 * kPairBytes);
    pair_sums<kVnni, 2>(units, kUnit, aq, l2, h2);
    prefetch_l1<kPairBytes>(ahead + kQuants + 3 * kPairBytes);
    pair_sums<kVnni, 3>(units, kUnit, aq, l3, h3);
    VecI sumi = add_i32(mul_i32(l0, scale_of<0, false>(u0, u1, u2)), mul_i32(h0, scale_of<1, false>(u0, u1, u2)));
    sumi = add_i32(sumi,
                   add_i32(mul_i32(l1, scale_of<2, false>(u0, u1, u2)), mul_i32(h1, scale_of<3, false>(u0, u1, u2))));
    sumi = add_i32(sumi,
                   add_i32(mul_i32(l2, scale_of<4, false>(u0, u1, u2)), mul_i32(h2, scale_of<5, false>(u0, u1, u2))));
    sumi = add_i32(sumi,
                   add_i32(mul_i32(l3, scale_of<6, false>(u0, u1, u2)), mul_i32(h3, scale_of<7, false>(u0, u1, u2))));
    auto bsum32 = [&](int j) { return bcast_i32(bs[2 * j] + bs[2 * j + 1]); };
    VecI summ =
        add_i32(mul_i32(scale_of<0, true>(u0, u1, u2), bsum32(0)), mul_i32(scale_of<1, true>(u0, u1, u2), bsum32(1)));
    summ = add_i32(summ, add_i32(mul_i32(scale_of<2, true>(u0, u1, u2), bsum32(2)),
                                 mul_i32(scale_of<3, true>(u0, u1, u2), bsum32(3))));
    summ = add_i32(summ, add_i32(mul_i32(scale_of<4, true>(u0, u1, u2), bsum32(4)),
                                 mul_i32(scale_of<5, true>(u0, u1, u2), bsum32(5))));
    summ = add_i32(summ, add_i32(mul_i32(scale_of<6, true>(u0, u1, u2), bsum32(6)),
                                 mul_i32(scale_of<7, true>(u0, u1, u2), bsum32(7))));
    const VecF vda = set1_f(da);
    acc = fmadd(cvt(sumi), mul_f(load_f16x(x), vda), acc);
    accm = fmadd(cvt(summ), mul_f(load_f16x(x + 32), vda), accm);
  }
  store_result(out, acc, accm);
}

// Lane-wise 16-bit pairs (m_2P, m_2P+1) of the mins of sub-blocks 2P and 2P + 1: one madd against a
// token's bsum pair P (bsum_pairs) gives m_2P * bsum32_2P + m_2P+1 * bsum32_2P+1, exactly.
template <int P>
inline VecI min_pair(VecI u0, VecI u1, VecI u2) {
  return or_i(scale_of<2 * P, true>(u0, u1, u2), _mm512_slli_epi32(scale_of<2 * P + 1, true>(u0, u1, u2), 16));
}

// Tokens of one packed pass: the decode order's group_tokens takes them at once (its
// accumulators, one sub-block's weights and the per-token sums nearly fill the 32 zmm
// registers), the grouped order in two calls of 4 (group_token_block).
constexpr int64_t kTokensPerPass = 8;
constexpr size_t kPackedQs = kTokensPerPass * kQK_K;
constexpr size_t kPackedSp = kTokensPerPass * kBsumPairsPerBlock;

// The activations of one pass (up to kTokensPerPass tokens) packed per super-block b: the tokens'
// quants at qs + b * kPackedQs (token t at + 256 t), their Q8_K scales at d + b * kTokensPerPass
// and their bsum pairs (kquant/q8_K_bsum_pairs.h) at sp + b * kPackedSp. Every activation operand of a block
// is then one base register plus a constant: with one base per token (a + t * a_stride) the 8-token
// pass spent ~1400 mov/lea recomputing and reloading addresses and ran slower per token than the
// 2-token pass.
struct PackedPass {
  const uint8_t* qs;
  const float* d;
  const uint32_t* sp;
  // The same pass from its token t on (same strides: a sub-pass of fewer tokens).
  PackedPass from(int64_t t) const { return {qs + t * kQK_K, d + t, sp + t * kBsumPairsPerBlock}; }
};

// Packs tokens [0, n_tok) of the Q8_K rows a (a_stride apart), kTokensPerPass per pass: pass p's
// block b at index p * nb + b of each array. Within one matmul the driver calls the gemm once per
// row chunk with the same activations: the packer keeps them (detail::current_matmul) instead of
// packing them again (1.1-1.5 % of an 8-client decode profile went to the repeats).
class PassPacker {
 public:
  void pack(const uint8_t* a, size_t a_stride, int64_t n_tok, int64_t nb) {
    if (packed_.same_as_last(a, a_stride, n_tok, nb)) return;
    const auto passes = static_cast<size_t>((n_tok + kTokensPerPass - 1) / kTokensPerPass);
    const size_t blocks = passes * static_cast<size_t>(nb);
    qs_.resize(blocks * kPackedQs);
    d_.resize(blocks * kTokensPerPass);
    sp_.resize(blocks * kPackedSp);
    for (int64_t t = 0; t < n_tok; ++t) {
      const size_t p = static_cast<size_t>(t / kTokensPerPass), tt = static_cast<size_t>(t % kTokensPerPass);
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* src = a + static_cast<size_t>(t) * a_stride + static_cast<size_t>(b) * sizeof(BlockQ8K);
        const size_t blk = p * static_cast<size_t>(nb) + static_cast<size_t>(b);
        std::memcpy(&qs_[blk * kPackedQs + tt * kQK_K], src + offsetof(BlockQ8K, qs), kQK_K);
        std::memcpy(&d_[blk * kTokensPerPass + tt], src + offsetof(BlockQ8K, d), sizeof(float));
        bsum_pairs(src, 0, 1, 1, &sp_[blk * kPackedSp + tt * kBsumPairsPerBlock]);
      }
    }
  }
  PackedPass pass(int64_t p, int64_t nb) const {
    const size_t blk = static_cast<size_t>(p) * static_cast<size_t>(nb);
    return {qs_.data() + blk * kPackedQs, d_.data() + blk * kTokensPerPass, sp_.data() + blk * kPackedSp};
  }

 private:
  std::vector<uint8_t> qs_;
  std::vector<float> d_;
  std::vector<uint32_t> sp_;
  detail::PreparedActivations packed_;  // what the arrays hold
};

// One 16-row group x T tokens: each weight unit is loaded and unpacked once per super-block and
// dotted with all T tokens (4 activation bytes broadcast per dot), so the unpack and the scale
// decoding are shared; per token the exact integers and float chains of the single-token kernel.
// kGrouped: llama.cpp's 4-row GEMM order (TypeOps::gemm_grouped, kquant/kernels.h): the same two
// chains with one step per sub-block pair (64 elements) instead of per super-block.
template <bool kVnni, int T, bool kGrouped = false>
void group_tokens(int64_t nb, const uint8_t* g, PackedPass pass, float* out, size_t out_stride, bool prefetch) {
  constexpr size_t kUnit = 64;
  VecF acc[T], accm[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = accm[t] = zero_f();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* x = g + static_cast<size_t>(b) * kGroupBlock;
    const uint8_t* aqb = pass.qs + static_cast<size_t>(b) * kPackedQs;
    const float* db = pass.d + static_cast<size_t>(b) * kTokensPerPass;
    const uint32_t* spb = pass.sp + static_cast<size_t>(b) * kPackedSp;
    const VecI u0 = load_unit(x + kScales), u1 = load_unit(x + kScales + kUnit),
               u2 = load_unit(x + kScales + 2 * kUnit);
    const uint8_t* units = x + kQuants;
    const VecF dw = load_f16x(x), dmw = load_f16x(x + 32);
    const uintptr_t ahead = reinterpret_cast<uintptr_t>(x) + kPrefetchBlocks * kGroupBlock;
    if (prefetch) prefetch_l1<kQuants>(ahead);
    VecI sumi[T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) sumi[t] = zero_i();
    // Sub-block J = 2C + H: the low (H = 0) or high nibbles of units 8C..8C+7.
    auto sub_block = [&]<int J>() {
      constexpr int C = J / 2, H = J % 2;
      if (prefetch && H == 0) prefetch_l1<kPairBytes>(ahead + kQuants + kPairBytes * C);
      const VecI nib = bcast_i32(0x0F0F0F0F);
      VecI wq[8];
#pragma GCC unroll 8
      for (int q = 0; q < 8; ++q) {
        const VecI v = load_unit(units + static_cast<size_t>(8 * C + q) * kUnit);
        wq[q] = H ? and_i(srli16_4(v), nib) : and_i(v, nib);
      }
      // The scale in both 16-bit halves of each dword: vpdpwssd / vpmaddwd against int16 pairs
      // of partial sums then applies it, where vpmulld + vpaddd on the whole sum ran slower.
      const VecI sc = scale_of<J, false>(u0, u1, u2);
      const VecI sc2 = or_i(sc, _mm512_slli_epi32(sc, 16));
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const uint8_t* aq = aqb + static_cast<size_t>(t) * kQK_K + 32 * J;
        if constexpr (kVnni) {
          // Two chains of 4 dpbusd (|sum| <= 16 * 15 * 128 = 30720: each fits int16), their low
          // 16 bits interleaved into the pairs of one vpdpwssd.
          VecI sa = zero_i(), sb = zero_i();
#pragma GCC unroll 4
          for (int q = 0; q < 4; ++q) {
            if constexpr (kGrouped) {
              sa = dot<true>(sa, wq[q], bcast_i32(load_i32(aq + 4 * q)));
              sb = dot<true>(sb, wq[q + 4], bcast_i32(load_i32(aq + 16 + 4 * q)));
            } else {
              sa = dot_bcast(sa, wq[q], aq + 4 * q);
              sb = dot_bcast(sb, wq[q + 4], aq + 16 + 4 * q);
            }
          }
          sumi[t] = madd_add<true>(sumi[t], _mm512_mask_blend_epi16(0xAAAAAAAAu, sa, _mm512_slli_epi32(sb, 16)), sc2);
        } else {
          VecI s16 = zero_i();
#pragma GCC unroll 8
          for (int q = 0; q < 8; ++q) s16 = add_i16(s16, maddubs(wq[q], bcast_i32(load_i32(aq + 4 * q))));
          sumi[t] = madd_add<false>(sumi[t], s16, sc2);
        }
      }
    };
    // The mins term of sub-block pairs [P0, P1) for token t: sum_J m_J * bsum32_J.
    auto mins = [&]<int P0, int P1>(int t) {
      const uint32_t* pairs = spb + static_cast<size_t>(t) * kBsumPairsPerBlock;
      VecI summ = zero_i();
      [&]<int... P>(std::integer_sequence<int, P...>) {
        ((summ = madd_add<kVnni>(summ, min_pair<P0 + P>(u0, u1, u2), bcast_i32(static_cast<int32_t>(pairs[P0 + P])))),
         ...);
      }
      (std::make_integer_sequence<int, P1 - P0>{});
      return summ;
    };
    auto step = [&](int t, VecI summ) {
      const VecF vda = set1_f(db[t]);
      acc[t] = fmadd(cvt(sumi[t]), mul_f(dw, vda), acc[t]);
      accm[t] = fmadd(cvt(summ), mul_f(dmw, vda), accm[t]);
    };
    auto pair = [&]<int C>() {
      sub_block.template operator()<2 * C>();
      sub_block.template operator()<2 * C + 1>();
      if constexpr (kGrouped) {
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          step(t, mins.template operator()<C, C + 1>(t));
          sumi[t] = zero_i();
        }
      }
    };
    pair.template operator()<0>();
    pair.template operator()<1>();
    pair.template operator()<2>();
    pair.template operator()<3>();
    if constexpr (!kGrouped) {
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) step(t, mins.template operator()<0, 4>(t));
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) store_result(out + static_cast<size_t>(t) * out_stride, acc[t], accm[t]);
}

// One pass of n (1..kTokensPerPass) tokens through a group. a: the pass's first Q8_K row (the
// single-token kernel reads it directly).
template <bool kVnni, bool kGrouped>
void group_token_block(int64_t nb, const uint8_t* g, const uint8_t* a, PackedPass pass, int64_t n, float* out,
                       size_t out_stride, bool prefetch) {
  if constexpr (kGrouped) {
    // The grouped order keeps 2 float chains per token besides the pair sums: 8 tokens spilled,
    // two passes of 4 from the packed pass do not. The decode order stays at 8 (2 x 4 ran slower).
    const int64_t first = std::min<int64_t>(n, 4);
    switch (first) {
      case 1: group_tokens<kVnni, 1, true>(nb, g, pass, out, out_stride, prefetch); break;
      case 2: group_tokens<kVnni, 2, true>(nb, g, pass, out, out_stride, prefetch); break;
      case 3: group_tokens<kVnni, 3, true>(nb, g, pass, out, out_stride, prefetch); break;
      default: group_tokens<kVnni, 4, true>(nb, g, pass, out, out_stride, prefetch); break;
    }
    if (n > first)
      group_token_block<kVnni, true>(nb, g, a, pass.from(first), n - first, out + first * out_stride, out_stride,
                                     false);
  } else {
    switch (n) {
      case 1: group_token<kVnni>(nb, g, a, out); break;
      case 2: group_tokens<kVnni, 2, false>(nb, g, pass, out, out_stride, prefetch); break;
      case 3: group_tokens<kVnni, 3, false>(nb, g, pass, out, out_stride, prefetch); break;
      case 4: group_tokens<kVnni, 4, false>(nb, g, pass, out, out_stride, prefetch); break;
      case 5: group_tokens<kVnni, 5, false>(nb, g, pass, out, out_stride, prefetch); break;
      case 6: group_tokens<kVnni, 6, false>(nb, g, pass, out, out_stride, prefetch); break;
      case 7: group_tokens<kVnni, 7, false>(nb, g, pass, out, out_stride, prefetch); break;
      default: group_tokens<kVnni, 8, false>(nb, g, pass, out, out_stride, prefetch); break;
    }
  }
}

// The gemm on repacked weights: n_rows a multiple of 16, w = the first group, groups
// 16 * w_stride bytes apart (w_stride = the dense row bytes). Tokens go kTokensPerPass at a
// time through each group (its weights stay in L1/L2 between passes).
template <bool kVnni, bool kGrouped = false>
void gemm(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
          float* out, size_t out_stride) {
  const int64_t nb = k / kQK_K;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  thread_local PassPacker packer;
  const bool packed = n_tok > 1 || kGrouped;
  if (packed) packer.pack(ab, a_stride, n_tok, nb);
  for (int64_t r0 = 0; r0 + kRows <= n_rows; r0 += kRows) {
    const uint8_t* g = wb + static_cast<size_t>(r0) * w_stride;
    for (int64_t t = 0; t < n_tok; t += kTokensPerPass)
      group_token_block<kVnni, kGrouped>(
          nb, g, ab + static_cast<size_t>(t) * a_stride, packed ? packer.pass(t / kTokensPerPass, nb) : PackedPass{},
          std::min<int64_t>(kTokensPerPass, n_tok - t),
          out + static_cast<size_t>(t) * out_stride + static_cast<size_t>(r0), out_stride, /*prefetch=*/t == 0);
  }
}

}  // namespace q4k_x16
}  // namespace
}  // namespace baton::kernels
