// Q6_K batches (the decode rows of a continuous batch, and prompts) with AVX512-VNNI, in the
// 8-lane order of kquant/qx_K_gemm_lanes_scalar.h: lane L of a (row, token, super-block)
// is the exact int32 sum over chunks c of sc(2c + L/4) * D(c, L) (D = the dot of the 4 unsigned
// quants and activations at 32c + 4L), minus 32 * (sc(2L) * bsums[2L] + sc(2L + 1) * bsums[2L + 1]).
// vpdpbusd of chunk c's 32 quant bytes against its 32 activation bytes gives D(c, L) in dword L,
// |D| <= 4 * 63 * 127 < 2^15. Chunks go in pairs (a, b) = (2p, 2p + 1): D(a, L) in the low and
// D(b, L) in the high 16 bits of dword L (vpslld + vpblendmw) form the int16 pair operand of one
// vpdpwssd with the scale pairs (sc(2a + L/4), sc(2b + L/4)), which adds both chunks' scaled sums
// into lane L; the bsum term is one more vpdpwssd against (-32 sc(2L), -32 sc(2L + 1)). Every
// step is exact integer arithmetic, so the lanes are the reference's; the float steps are its
// own: fma(a.d * f16(w.d), float(lane L), acc_L) per super-block in order, then hsum_float_8.
// Per (row, token, super-block): 8 vpdpbusd + 5 vpdpwssd in 256-bit units (the maddubs kernel in
// kquant/qx_K_gemm_lanes.h: 8 vpmaddubsw + 9 vpmaddwd + 9 adds and shifts). Two tokens share a zmm (one
// per 256-bit half, the weights broadcast to both), halving the instructions.
// The chunk pairs are formed by shift + blend and decoded straight into zmm (faster than a dword
// interleave and one vpackssdw: docs/BENCHMARKS.md, Kernel notes).
#include <immintrin.h>

#include <algorithm>
#include <vector>

#pragma GCC target("avx512vnni")

#include "kernels/kquant/qx_K_gemm_lanes.h"
#include "kernels/kquant/qx_K_lanes.h"

namespace baton::kernels::avx512 {
namespace {

using kq_lanes::load32;

constexpr int64_t kTile = 16;  // tokens whose accumulators live across one weight row
// Row passes ahead that the weights are prefetched (T0): one pass of work is too short to hide
// DRAM latency; 2 measured best (docs/BENCHMARKS.md, Kernel notes).
constexpr int64_t kPrefetchRows = 2;

// Two tokens' Q8_K super-blocks (the low 256 bits token 2j, the high token 2j + 1; a missing
// second token is zeros): q[c] = the 32 quants of chunk c; bsums as stored (dword L = bsums[2L],
// bsums[2L + 1]); d per half.
struct alignas(64) ActPair {
  __m512i q[8];
  __m512i bsums;
  __m512 d;
};

void repack_acts(const uint8_t* a, size_t a_stride, int64_t n_tok, int64_t nb, ActPair* dst) {
  for (int64_t j = 0; 2 * j < n_tok; ++j)
    for (int64_t b = 0; b < nb; ++b) {
      ActPair& pr = dst[j * nb + b];
      for (int h = 0; h < 2; ++h) {
        const int64_t t = 2 * j + h;
        __m256i q[8] = {}, bsums = _mm256_setzero_si256();
        float d = 0.0f;
        if (t < n_tok) {
          const uint8_t* ab = a + static_cast<size_t>(t) * a_stride + static_cast<size_t>(b) * sizeof(BlockQ8K);
          for (int c = 0; c < 8; ++c) q[c] = load32(ab + offsetof(BlockQ8K, qs) + 32 * c);
          bsums = load32(ab + offsetof(BlockQ8K, bsums));
          d = kq_lanes::float_at(ab + offsetof(BlockQ8K, d));
        }
        if (h == 0) {
          for (int c = 0; c < 8; ++c) pr.q[c] = _mm512_castsi256_si512(q[c]);
          pr.bsums = _mm512_castsi256_si512(bsums);
          pr.d = _mm512_castps256_ps512(_mm256_set1_ps(d));
        } else {
          for (int c = 0; c < 8; ++c) pr.q[c] = _mm512_inserti64x4(pr.q[c], q[c], 1);
          pr.bsums = _mm512_inserti64x4(pr.bsums, bsums, 1);
          pr.d = _mm512_insertf32x8(pr.d, _mm256_set1_ps(d), 1);
        }
      }
    }
}

// One weight super-block, decoded once for every token pair, in both 256-bit halves.
struct WBlock {
  __m512i q[8];   // q[c]: chunk c's unsigned quants (0..63)
  __m512i sp[4];  // dword L of sp[p]: (sc(4p + L/4), sc(4p + 2 + L/4)) as int16
  __m512i corr;   // dword L: (-32 sc(2L), -32 sc(2L + 1)) as int16
  __m512 d;       // f16(w.d)
};

// 32 bytes at p in both 256-bit halves: vbroadcasti64x4 from memory, a load without a shuffle.
inline __m512i load32_x2(const uint8_t* p) { return _mm512_broadcast_i64x4(load32(p)); }

// Decoded straight in zmm from broadcast loads, so both halves come out of the decode itself
// (no vshufi64x2 per vector after a ymm decode).
inline void decode(const uint8_t* x, WBlock& w) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
  __m512i(&q)[8] = w.q;
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    const __m512i ql0 = load32_x2(x + offsetof(BlockQ6K, ql) + 64 * h);
    const __m512i ql1 = load32_x2(x + offsetof(BlockQ6K, ql) + 64 * h + 32);
    const __m512i qh = load32_x2(x + offsetof(BlockQ6K, qh) + 32 * h);
    // a | (b & c): the low nibble and two high bits of each quant (kq_lanes::Q6::quants)
    const auto merge = [&](__m512i lo, __m512i hi) {
      return _mm512_ternarylogic_epi32(_mm512_and_si512(lo, low4), hi, bits45, 0xF8);
    };
    q[4 * h + 0] = merge(ql0, _mm512_slli_epi16(qh, 4));
    q[4 * h + 1] = merge(ql1, _mm512_slli_epi16(qh, 2));
    q[4 * h + 2] = merge(_mm512_srli_epi16(ql0, 4), qh);
    q[4 * h + 3] = merge(_mm512_srli_epi16(ql1, 4), _mm512_srli_epi16(qh, 2));
  }
  // The 16 scales as int16 in both halves (the 16 bytes broadcast to both 128-bit lanes first).
  const __m512i s16 =
      _mm512_cvtepi8_epi16(_mm256_broadcastsi128_si256(kq_lanes::load16(x + offsetof(BlockQ6K, scales))));
  const __m512i pick = _mm512_broadcast_i64x4(_mm256_setr_epi16(0, 2, 0, 2, 0, 2, 0, 2, 1, 3, 1, 3, 1, 3, 1, 3));
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p)
    w.sp[p] = _mm512_permutexvar_epi16(_mm512_add_epi16(pick, _mm512_set1_epi16(static_cast<int16_t>(4 * p))), s16);
  w.corr = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(s16, 5));
  w.d = _mm512_set1_ps(kq_lanes::half_at(x + offsetof(BlockQ6K, d)));
}

// acc (lanes 0..7 the low token's, 8..15 the high token's) += one super-block, as the reference.
inline __m512 block_step(const WBlock& w, const ActPair& a, __m512 acc) {
  const __m512i zero = _mm512_setzero_si512();
  __m512i lanes = _mm512_dpwssd_epi32(zero, a.bsums, w.corr);
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p) {
    const __m512i da = _mm512_dpbusd_epi32(zero, w.q[2 * p], a.q[2 * p]);
    const __m512i db = _mm512_dpbusd_epi32(zero, w.q[2 * p + 1], a.q[2 * p + 1]);
    // (D(2p, L), D(2p + 1, L)) as the int16 pair of dword L: da fits 16 bits, so its low half is da.
    const __m512i pairs = _mm512_mask_blend_epi16(0xAAAAAAAAu, da, _mm512_slli_epi32(db, 16));
    lanes = _mm512_dpwssd_epi32(lanes, pairs, w.sp[p]);
  }
  return _mm512_fmadd_ps(_mm512_mul_ps(a.d, w.d), _mm512_cvtepi32_ps(lanes), acc);
}

// Tokens [t0, t0 + nt) (nt <= kTile; act = their kPairs pairs) against every row. kPairs is a
// template argument so that the accumulators stay in registers. Rows go in blocks of kRowBlock
// and the super-blocks in chunks whose activations fit in L1 (down 2048x5632, 8 tokens: 56 KB
// of them; 3.24 -> 2.8 ns per row, token and super-block in cache); the accumulators of a row
// block wait on the stack between chunks, so each (row, token) still adds its super-blocks in
// order.
template <int kPairs>
void rows_tile(int64_t nb, const uint8_t* w8, size_t w_stride, int64_t n_rows, const ActPair* act, int64_t t0,
               int64_t nt, float* out, size_t out_stride) {
  constexpr int64_t kChunkBytes = 24 << 10;
  constexpr int64_t kb = std::max<int64_t>(1, kChunkBytes / static_cast<int64_t>(kPairs * sizeof(ActPair)));
  constexpr int64_t kRowBlock = 16;
  const auto row = [&](int64_t r) { return w8 + static_cast<size_t>(r) * w_stride; };
  for (int64_t r0 = 0; r0 < n_rows; r0 += kRowBlock) {
    const int64_t r_end = std::min(n_rows, r0 + kRowBlock);
    __m512 acc[kRowBlock][kPairs];
    for (int64_t r = 0; r < r_end - r0; ++r)
      for (int j = 0; j < kPairs; ++j) acc[r][j] = _mm512_setzero_ps();
    for (int64_t b0 = 0; b0 < nb; b0 += kb) {
      const int64_t b1 = std::min(nb, b0 + kb);
      for (int64_t r = r0; r < r_end; ++r) {
        // Prefetched while block b is dotted: the weights of the same step kPrefetchRows row
        // passes later (a later row of this chunk, else of the next chunk, else of the next row
        // block's first chunk).
        const uint8_t* next = nullptr;
        int64_t shift = 0;
        const int64_t ahead = r + kPrefetchRows;
        if (ahead < r_end) next = row(ahead);
        else if (b1 < nb) {
          if (r0 + (ahead - r_end) < r_end) next = row(r0 + (ahead - r_end)), shift = b1 - b0;
        } else if (ahead < n_rows) {
          next = row(ahead), shift = -b0;
        }
        __m512 a[kPairs];
        for (int j = 0; j < kPairs; ++j) a[j] = acc[r - r0][j];
        const uint8_t* wr = row(r);
        for (int64_t b = b0; b < b1; ++b) {
          if (next && b + shift < nb)
            for (size_t off = 0; off < sizeof(BlockQ6K); off += 64)
              _mm_prefetch(
                  reinterpret_cast<const char*>(next + static_cast<size_t>(b + shift) * sizeof(BlockQ6K) + off),
                  _MM_HINT_T0);
          WBlock wb;
          decode(wr + static_cast<size_t>(b) * sizeof(BlockQ6K), wb);
#pragma GCC unroll 8
          for (int j = 0; j < kPairs; ++j) a[j] = block_step(wb, act[j * nb + b], a[j]);
        }
        for (int j = 0; j < kPairs; ++j) acc[r - r0][j] = a[j];
      }
    }
    for (int64_t r = r0; r < r_end; ++r)
      for (int j = 0; j < kPairs; ++j) {
        const int64_t t = t0 + 2 * j;
        out[static_cast<size_t>(t) * out_stride + static_cast<size_t>(r)] =
            kq_lanes::hsum8(_mm512_castps512_ps256(acc[r - r0][j]));
        if (2 * j + 1 < nt)
          out[static_cast<size_t>(t + 1) * out_stride + static_cast<size_t>(r)] =
              kq_lanes::hsum8(_mm512_extractf32x8_ps(acc[r - r0][j], 1));
      }
  }
}

using TileFn = void (*)(int64_t, const uint8_t*, size_t, int64_t, const ActPair*, int64_t, int64_t, float*, size_t);
constexpr TileFn kTiles[kTile / 2] = {rows_tile<1>, rows_tile<2>, rows_tile<3>, rows_tile<4>,
                                      rows_tile<5>, rows_tile<6>, rows_tile<7>, rows_tile<8>};

}  // namespace

void gemm_q6_k_rows_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                         int64_t n_tok, float* out, size_t out_stride) {
  const int64_t nb = k / kQK_K;
  const uint8_t* a8 = static_cast<const uint8_t*>(a);
  const uint8_t* w8 = static_cast<const uint8_t*>(w);
  const int64_t n_tiles = (n_tok + kTile - 1) / kTile;
  const int64_t tile_pairs = kTile / 2 * nb;  // ActPairs per token tile
  thread_local std::vector<ActPair> act;
  act.resize(static_cast<size_t>(n_tiles * tile_pairs));
  for (int64_t g = 0; g < n_tiles; ++g)
    repack_acts(a8 + static_cast<size_t>(kTile * g) * a_stride, a_stride, std::min(kTile, n_tok - kTile * g), nb,
                act.data() + g * tile_pairs);
  if (n_tiles == 1) {
    kTiles[(n_tok + 1) / 2 - 1](nb, w8, w_stride, n_rows, act.data(), 0, n_tok, out, out_stride);
    return;
  }
  // Several token tiles: 16-row slices outside, so a slice's weights are read from DRAM once and
  // from L2 by the later tiles.
  constexpr int64_t kSlice = 16;
  for (int64_t r0 = 0; r0 < n_rows; r0 += kSlice)
    for (int64_t g = 0; g < n_tiles; ++g) {
      const int64_t nt = std::min(kTile, n_tok - kTile * g);
      kTiles[(nt + 1) / 2 - 1](nb, w8 + static_cast<size_t>(r0) * w_stride, w_stride, std::min(kSlice, n_rows - r0),
                               act.data() + g * tile_pairs, kTile * g, nt, out + r0, out_stride);
    }
}

}  // namespace baton::kernels::avx512
