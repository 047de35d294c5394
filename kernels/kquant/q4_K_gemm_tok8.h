// The Q4_K batch gemm (prompt rows) with 8 tokens per vector: lane t of every vector is token t,
// so the 8 results of a row come out of the integer sums directly, without the per-64-element
// cross-lane reduction (vphaddd) of the row-parallel tiles (kquant/qx_K_gemm_rows256.h), which cost about
// as much as the products there.
//
// The activations of each group of 8 tokens are interleaved once per matmul and thread
// (Tok8Block): dword q of a super-block's quants holds, in lane t, token t's quants 4q..4q+3.
// A row's 4 quants 4q..4q+3 broadcast to every lane then multiply all 8 tokens in one
// vpmaddubsw (weights unsigned 0..15, activations signed: pair sums <= 2 * 15 * 128, and the 8
// products of one 32-element sub-block add in int16 to at most 30720: exact); one vpmaddwd by the
// sub-block's scale gives int32. The mins term per 64 elements is one vpmaddwd of the tokens'
// bsum pairs (prepared as int16 pairs) by the two sub-blocks' mins.
// Per (row, token) the integer sums are the exact sumi / summ of every other variant and the
// float steps those of Order::kSplit (one step per super-block) or Order::kGrouped (one per 64
// elements) in kquant/qx_K_gemm_rows256.h: bit-identical results, any batch size.
//
// Each row's super-blocks are unpacked once per call (into this thread's scratch) and reused by
// every token group. Included by files built for x86-64-v3 or higher; internal linkage per ISA.
// The AVX-VNNI tier's copy (simd256_tier.h) adds the 8 products of a sub-block with vpdpbusd
// straight into int32 (|sum| <= 32 * 15 * 128 = 61440) and applies the scale with one vpmulld:
// the same exact integer sums.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kquant/blocks.h"
#include "kernels/core/scratch.h"
#include "kernels/kquant/qx_K_gemm_rows256.h"
#include "kernels/kquant/qx_K_unpack.h"
#include "kernels/core/simd256_tier.h"

namespace baton::kernels::kq {
namespace {

inline constexpr int kTok8 = 8;

// One super-block of 8 tokens' activations.
struct alignas(32) Tok8Block {
  int32_t q[64][kTok8];  // [q][t]: token t's quants 4q..4q+3
  int32_t sp[4][kTok8];  // [p][t]: token t's bsum pairs of sub-blocks 2p, 2p + 1 as int16 (low, high)
  float da[kTok8];       // token t's d
};

// 8 rows of 8 dwords transposed in place: v[i] lane j <- v[j] lane i.
inline void transpose8x8_epi32(__m256i v[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    u[4 * i] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_permute2x128_si256(u[i], u[4 + i], 0x20);
    v[4 + i] = _mm256_permute2x128_si256(u[i], u[4 + i], 0x31);
  }
}

// The Tok8Blocks of tokens a[0..8) (Q8_K rows), nb super-blocks each.
inline void tok8_prepare(const uint8_t* const* a, int64_t nb, Tok8Block* out) {
  for (int64_t b = 0; b < nb; ++b) {
    const size_t off = static_cast<size_t>(b) * sizeof(BlockQ8K);
    Tok8Block& o = out[b];
    for (int c = 0; c < 8; ++c) {  // 32 quant bytes (8 dwords) of each token at a time
      __m256i v[8];
      for (int t = 0; t < kTok8; ++t) v[t] = load32(a[t] + off + offsetof(BlockQ8K, qs) + 32 * c);
      transpose8x8_epi32(v);
      for (int q = 0; q < 8; ++q) store32(o.q[8 * c + q], v[q]);
    }
    for (int t = 0; t < kTok8; ++t) {
      int16_t bs[16];
      std::memcpy(bs, a[t] + off + offsetof(BlockQ8K, bsums), sizeof(bs));
      for (int p = 0; p < 4; ++p) {
        // |bsum| <= 16 * 128, so a pair fits int16.
        const auto lo = static_cast<uint16_t>(bs[4 * p] + bs[4 * p + 1]);
        const auto hi = static_cast<uint16_t>(bs[4 * p + 2] + bs[4 * p + 3]);
        o.sp[p][t] = static_cast<int32_t>(lo | (static_cast<uint32_t>(hi) << 16));
      }
      std::memcpy(&o.da[t], a[t] + off + offsetof(BlockQ8K, d), sizeof(float));
    }
  }
}

// Row u[0..nb) against one token group: res lane t = the row's result for token t.
template <bool kGrouped>
inline __m256 q4k_row_tok8(int64_t nb, const Unpacked* u, const Tok8Block* act) {
  __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const Unpacked& w = u[b];
    const Tok8Block& x = act[b];
    const __m256 da = _mm256_load_ps(x.da);
    const __m256 dd = _mm256_mul_ps(_mm256_set1_ps(w.d), da), dmm = _mm256_mul_ps(_mm256_set1_ps(w.dmin), da);
    __m256i sumi = _mm256_setzero_si256(), summ = _mm256_setzero_si256();
    for (int p = 0; p < 4; ++p) {
      __m256i sp = _mm256_setzero_si256();
      for (int j = 2 * p; j < 2 * p + 2; ++j) {
        __m256i s = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int q = 0; q < 8; ++q) {
          const __m256i wq = _mm256_set1_epi32(load_i32(w.q + 32 * j + 4 * q));
          const __m256i aq = _mm256_load_si256(reinterpret_cast<const __m256i*>(x.q[8 * j + q]));
          if constexpr (dot256::kVnni) s = dot256::dpbusd(s, wq, aq);
          else s = _mm256_add_epi16(s, _mm256_maddubs_epi16(wq, aq));
          __asm__("" : "+x"(s));  // a chain: reassociated, all 8 products were live at once
        }
        if constexpr (dot256::kVnni) sp = _mm256_add_epi32(sp, _mm256_mullo_epi32(s, _mm256_set1_epi32(w.sc[2 * j])));
        else sp = dot256::dpwssd(sp, s, _mm256_set1_epi16(w.sc[2 * j]));
      }
      const int32_t mins =
          static_cast<int32_t>(static_cast<uint16_t>(w.corr[4 * p]) |
                               (static_cast<uint32_t>(static_cast<uint16_t>(w.corr[4 * p + 2])) << 16));
      const __m256i mp =
          _mm256_madd_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(x.sp[p])), _mm256_set1_epi32(mins));
      if constexpr (kGrouped) {
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sp), dd, acc);
        accm = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mp), dmm, accm);
      } else {
        sumi = _mm256_add_epi32(sumi, sp);
        summ = _mm256_add_epi32(summ, mp);
      }
    }
    if constexpr (!kGrouped) {
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), dd, acc);
      accm = _mm256_fmadd_ps(_mm256_cvtepi32_ps(summ), dmm, accm);
    }
  }
  return _mm256_sub_ps(acc, accm);
}

// The token groups' activations, prepared once per matmul and thread (detail::PreparedActivations).
class Tok8Preparer {
 public:
  const Tok8Block* prepare(const uint8_t* a, size_t a_stride, int64_t n_groups, int64_t nb) {
    if (!prepared_.same_as_last(a, a_stride, n_groups * kTok8, nb)) {
      blocks_.resize(static_cast<size_t>(n_groups * nb));
      for (int64_t g = 0; g < n_groups; ++g) {
        const uint8_t* rows[kTok8];
        for (int t = 0; t < kTok8; ++t) rows[t] = a + static_cast<size_t>(g * kTok8 + t) * a_stride;
        tok8_prepare(rows, nb, blocks_.data() + g * nb);
      }
    }
    return blocks_.data();
  }

 private:
  detail::PreparedActivations prepared_;
  std::vector<Tok8Block> blocks_;
};

// The first n_tok - n_tok % 8 tokens of the gemm (the caller does the rest): every row's
// super-blocks unpacked once, then each token group.
template <bool kGrouped>
void gemm_q4k_tok8(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                   int64_t n_tok, float* out, size_t out_stride) {
  const int64_t nb = k / kQK_K, n_groups = n_tok / kTok8;
  thread_local Tok8Preparer preparer;
  const Tok8Block* act = preparer.prepare(static_cast<const uint8_t*>(a), a_stride, n_groups, nb);
  auto* u = static_cast<Unpacked*>(detail::thread_scratch(static_cast<size_t>(nb) * sizeof(Unpacked)));
  const uint8_t* w8 = static_cast<const uint8_t*>(w);
  for (int64_t r = 0; r < n_rows; ++r) {
    const uint8_t* row = w8 + static_cast<size_t>(r) * w_stride;
    for (int64_t b = 0; b < nb; ++b) FmtQ4K::unpack(row + static_cast<size_t>(b) * sizeof(BlockQ4K), u[b]);
    for (int64_t g = 0; g < n_groups; ++g) {
      alignas(32) float res[kTok8];
      _mm256_store_ps(res, q4k_row_tok8<kGrouped>(nb, u, act + g * nb));
      for (int t = 0; t < kTok8; ++t)
        out[static_cast<size_t>(g * kTok8 + t) * out_stride + static_cast<size_t>(r)] = res[t];
    }
  }
}

// The Q4_K gemm for batches (n_tok > 1) in Order::kSplit / kGrouped: whole token groups here,
// the last n_tok % 8 tokens through the row-parallel tiles.
template <Order O>
void gemm_q4k_batch(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                    int64_t n_tok, float* out, size_t out_stride) {
  static_assert(O == Order::kSplit || O == Order::kGrouped);
  const int64_t whole = n_tok - n_tok % kTok8;
  if (whole > 0) gemm_q4k_tok8<O == Order::kGrouped>(k, w, w_stride, n_rows, a, a_stride, whole, out, out_stride);
  if (whole < n_tok)
    gemm_rows256<FmtQ4K, O>(k, w, w_stride, n_rows,
                            static_cast<const uint8_t*>(a) + static_cast<size_t>(whole) * a_stride, a_stride,
                            n_tok - whole, out + static_cast<size_t>(whole) * out_stride, out_stride);
}

}  // namespace
}  // namespace baton::kernels::kq
