// Q6_K prefill with AVX512-VNNI, token-parallel, in the 8-lane order of kq_lanes_scalar.h.
// Lanes of a zmm are 16 tokens. Activations are transposed once per call so that zmm q[i]
// holds dword i (bytes 4i..4i+3) of one super-block for all 16 tokens (signed, as stored).
// Per weight row and super-block, dword i = 8c + L of the unsigned quants (chunk c, lane L)
// is broadcast into vpdpbusd: D(c, L) = the exact 4-product sum, |D| <= 4 * 63 * 128 < 2^15.
// Two chunks' D of the same lane are packed into int16 pairs and vpdpwssd adds
// sc(2c + L/4) * D(c, L) + sc(2c' + L/4) * D(c', L) into the int32 lane L: the same exact
// integer lane as every other variant; the -32 correction goes through the bsums as in
// block_step. The float steps are the reference's: d = a.d * f16(w.d), fma per lane per
// super-block in order, hsum_float_8 at the end, so results equal the scalar bits.
// Cost per (row, 16 tokens, super-block): 64 vpdpbusd + 40 vpdpwssd (the ymm lanes kernel: 17
// multiply ops per token). Measured (Zen 4, 4096x4096, 1 thread, CPU time): 128 tokens 31 -> 28 ms,
// 512 tokens 123 -> 106 ms; the one-lane-per-token kernel this order replaced was 2-4x faster,
// the 8 separate lanes (and their scales) are what cost.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#pragma GCC target("avx512vnni")

#include "kernels/kq_lanes_gemm.h"
#include "kernels/kq_lanes_kernels.h"

namespace baton::kernels::avx512 {
namespace {

// Up to 16 tokens the decode-rows kernel (q6k_rows_vnni_avx512.cpp; one token: the ymm lanes
// kernel) is faster: rows-bench, one thread, 2048x5632: 8 tokens 1.25 ms in the lanes kernel vs
// 2.75 ms here, 16 tokens 2.5 vs 2.8.
constexpr int64_t kMinTokens = 17;
constexpr int64_t kRowBlock = 16;  // rows decoded together (Q6_K 4096 wide: 16 x 7 KB)

// 16 tokens' activations of one super-block, transposed.
struct alignas(64) ActBlock {
  int32_t q[64][16];      // q[i][t] = token t's qs[4i .. 4i + 3]
  int32_t bsums[8][16];   // bsums[L][t] = token t's (bsums[2L], bsums[2L + 1]) as two int16
  float d[16];            // token t's d (0 for padding lanes)
};

void repack(const uint8_t* a, size_t a_stride, int64_t t0, int64_t n, int64_t nb, ActBlock* dst) {
  for (int64_t b = 0; b < nb; ++b) {
    ActBlock& blk = dst[b];
    std::memset(&blk, 0, sizeof blk);
    for (int64_t t = 0; t < n; ++t) {
      const uint8_t* ab = a + static_cast<size_t>(t0 + t) * a_stride + static_cast<size_t>(b) * sizeof(BlockQ8K);
      int32_t words[64];
      std::memcpy(words, ab + offsetof(BlockQ8K, qs), sizeof words);
      for (int i = 0; i < 64; ++i) blk.q[i][t] = words[i];
      int32_t pairs[8];
      std::memcpy(pairs, ab + offsetof(BlockQ8K, bsums), sizeof pairs);
      for (int L = 0; L < 8; ++L) blk.bsums[L][t] = pairs[L];
      std::memcpy(&blk.d[t], ab + offsetof(BlockQ8K, d), sizeof(float));
    }
  }
}

inline int32_t pair16(int a, int b) {
  return static_cast<int32_t>((static_cast<uint32_t>(static_cast<uint16_t>(a))) |
                              (static_cast<uint32_t>(static_cast<uint16_t>(b)) << 16));
}

// One weight super-block, decoded for block_tokens: the 64 dwords of unsigned quants, the
// scale pairs (sc(2c + h), sc(2c + 2 + h)) per lane L (h = L / 4) and chunk pair c = 0, 2, 4, 6,
// the bsum-correction scale pairs (sc(2L), sc(2L + 1)) and f16(d).
struct alignas(64) WRow {
  int32_t q[64];
  int32_t sp[8][4];
  int32_t cp[8];
  float d;
};

void decode(const uint8_t* x, WRow& r) {
  kq_lanes::WBlock blk;
  kq_lanes::Q6::load(x, blk);
  for (int c = 0; c < 8; ++c) _mm256_storeu_si256(reinterpret_cast<__m256i*>(r.q + 8 * c), blk.q[c]);
  int8_t sc[16];
  std::memcpy(sc, x + offsetof(BlockQ6K, scales), 16);
  for (int L = 0; L < 8; ++L) {
    const int h = L / 4;
    for (int p = 0; p < 4; ++p) r.sp[L][p] = pair16(sc[4 * p + h], sc[4 * p + 2 + h]);
    r.cp[L] = pair16(sc[2 * L], sc[2 * L + 1]);
  }
  r.d = blk.d;
}

// One weight super-block against one 16-token ActBlock: acc[L] updated in order.
inline void block_tokens(const WRow& w, const ActBlock& A, __m512 acc[8]) {
  const __m512i low16 = _mm512_set1_epi32(0xFFFF);
  __m512i lane[8];
#pragma GCC unroll 8
  for (int L = 0; L < 8; ++L) {
    __m512i sum = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      const int c = 2 * p;
      const __m512i d0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi32(w.q[8 * c + L]),
                                             _mm512_load_si512(A.q[8 * c + L]));
      const __m512i d1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi32(w.q[8 * c + 8 + L]),
                                             _mm512_load_si512(A.q[8 * c + 8 + L]));
      // (d0 & 0xFFFF) | (d1 << 16): both fit int16, so the words are exactly d0 and d1.
      const __m512i packed = _mm512_ternarylogic_epi32(d0, _mm512_slli_epi32(d1, 16), low16, 0xE4);
      sum = _mm512_dpwssd_epi32(sum, packed, _mm512_set1_epi32(w.sp[L][p]));
    }
    // Q6_K: lane L -= 32 * (sc[2L] * bsums[2L] + sc[2L + 1] * bsums[2L + 1]).
    const __m512i corr = _mm512_dpwssd_epi32(_mm512_setzero_si512(), _mm512_load_si512(A.bsums[L]),
                                             _mm512_set1_epi32(w.cp[L]));
    lane[L] = _mm512_sub_epi32(sum, _mm512_slli_epi32(corr, 5));
  }
  const __m512 d = _mm512_mul_ps(_mm512_load_ps(A.d), _mm512_set1_ps(w.d));
#pragma GCC unroll 8
  for (int L = 0; L < 8; ++L) acc[L] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(lane[L]), acc[L]);
}

// Token group g (tokens 16g ..) of one decoded row r: results to out.
void row_group(int64_t nb, const WRow* row, const ActBlock* act, int64_t g, int64_t n_tok, int64_t r, float* out,
               size_t out_stride) {
  __m512 acc[8];
  for (auto& v : acc) v = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) block_tokens(row[b], act[g * nb + b], acc);
  // hsum_float_8 per token: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
  const __m512 s0 = _mm512_add_ps(acc[0], acc[4]), s1 = _mm512_add_ps(acc[1], acc[5]);
  const __m512 s2 = _mm512_add_ps(acc[2], acc[6]), s3 = _mm512_add_ps(acc[3], acc[7]);
  alignas(64) float res[16];
  _mm512_store_ps(res, _mm512_add_ps(_mm512_add_ps(s0, s2), _mm512_add_ps(s1, s3)));
  const int64_t nt = std::min<int64_t>(16, n_tok - 16 * g);
  for (int64_t t = 0; t < nt; ++t) out[static_cast<size_t>(16 * g + t) * out_stride + static_cast<size_t>(r)] = res[t];
}

struct Scratch {
  std::vector<ActBlock> act;
  std::vector<WRow> row;  // kRowBlock weight rows, decoded
};

}  // namespace

void gemm_q6_k_lanes_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                          int64_t n_tok, float* out, size_t out_stride) {
  if (n_tok == 1) {  // decode of one sequence: memory-bound, the block stays in registers there
    gemm_q6_k_lanes(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
    return;
  }
  if (n_tok < kMinTokens) {
    gemm_q6_k_rows_vnni(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
    return;
  }
  const int64_t nb = k / kQK_K;
  const int64_t n_groups = (n_tok + 15) / 16;
  thread_local Scratch s;
  s.act.resize(static_cast<size_t>(n_groups * nb));
  s.row.resize(static_cast<size_t>(kRowBlock * nb));
  const uint8_t* a8 = static_cast<const uint8_t*>(a);
  for (int64_t g = 0; g < n_groups; ++g)
    repack(a8, a_stride, 16 * g, std::min<int64_t>(16, n_tok - 16 * g), nb, s.act.data() + g * nb);

  // Blocks of kRowBlock rows: their decoded super-blocks and one token group's activations
  // stay in L2 while the group passes over every row of the block.
  const uint8_t* w8 = static_cast<const uint8_t*>(w);
  for (int64_t r0 = 0; r0 < n_rows; r0 += kRowBlock) {
    const int64_t nr = std::min(kRowBlock, n_rows - r0);
    for (int64_t r = 0; r < nr; ++r) {
      const uint8_t* wr = w8 + static_cast<size_t>(r0 + r) * w_stride;
      for (int64_t b = 0; b < nb; ++b)
        decode(wr + static_cast<size_t>(b) * sizeof(BlockQ6K), s.row[static_cast<size_t>(r * nb + b)]);
    }
    for (int64_t g = 0; g < n_groups; ++g)
      for (int64_t r = 0; r < nr; ++r)
        row_group(nb, s.row.data() + r * nb, s.act.data(), g, n_tok, r0 + r, out, out_stride);
  }
}

}  // namespace baton::kernels::avx512
