// Q6_K decode rows (batches of up to 16 single rows of a continuous batch) with AVX512-VNNI on
// ymm registers, in the 8-lane order of kq_lanes_scalar.h: lane L of a (row, token, super-block)
// is the exact int32 sum over chunks c of sc(2c + L/4) * D(c, L) (D = the dot of the 4 unsigned
// quants and activations at 32c + 4L), minus 32 * (sc(2L) * bsums[2L] + sc(2L + 1) * bsums[2L + 1]).
// Chunks are taken in pairs (a, b) = (2p, 2p + 1). Weights (once per row and super-block, for all
// tokens) and activations (once per call) are interleaved dword-wise as unpacklo/hi_epi32(a, b),
// so vpdpbusd gives X = (Da0 Db0 Da1 Db1 | Da4 Db4 Da5 Db5) and Y = (Da2 Db2 Da3 Db3 | Da6 ...),
// and vpackssdw(X, Y) puts (Da_L, Db_L) in dword L (|D| <= 4 * 63 * 128 < 2^15: no saturation).
// vpdpwssd with the scale pairs (sc(2a + L/4), sc(2b + L/4)) then adds both chunks' scaled sums
// into lane L; the bsum term is one more vpdpwssd against (-32 sc(2L), -32 sc(2L + 1)). Every
// step is exact integer arithmetic, so the lanes are the reference's; the float steps are its
// own: fma(a.d * f16(w.d), float(lane L), acc_L) per super-block in order, then hsum_float_8.
// Per (row, token, super-block): 8 vpdpbusd + 4 vpackssdw + 5 vpdpwssd (the maddubs kernel in
// kq_lanes_gemm.h: 8 vpmaddubsw + 9 vpmaddwd + 9 adds and shifts).
#include <immintrin.h>

#include <algorithm>
#include <vector>

#pragma GCC target("avx512vnni")

#include "kernels/kq_lanes_gemm.h"
#include "kernels/kq_lanes_kernels.h"

namespace baton::kernels::avx512 {
namespace {

using kq_lanes::half_at;
using kq_lanes::load32;

constexpr int64_t kMaxTile = 16;  // tokens whose accumulators live across one weight row

// One token's Q8_K super-block, interleaved as the weights: x[p] / y[p] = unpacklo / unpackhi_epi32
// of chunks 2p and 2p + 1; bsums as stored (dword L = bsums[2L], bsums[2L + 1]); d.
struct alignas(32) ActBlock {
  __m256i x[4];
  __m256i y[4];
  __m256i bsums;
  float d;
};

void repack_acts(const uint8_t* a, size_t a_stride, int64_t n_tok, int64_t nb, ActBlock* dst) {
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* ab = a + static_cast<size_t>(t) * a_stride + static_cast<size_t>(b) * sizeof(BlockQ8K);
      ActBlock& blk = dst[t * nb + b];
      for (int p = 0; p < 4; ++p) {
        const __m256i c0 = load32(ab + offsetof(BlockQ8K, qs) + 64 * p);
        const __m256i c1 = load32(ab + offsetof(BlockQ8K, qs) + 64 * p + 32);
        blk.x[p] = _mm256_unpacklo_epi32(c0, c1);
        blk.y[p] = _mm256_unpackhi_epi32(c0, c1);
      }
      blk.bsums = load32(ab + offsetof(BlockQ8K, bsums));
      blk.d = kq_lanes::float_at(ab + offsetof(BlockQ8K, d));
    }
}

// One weight super-block, decoded for every token of the batch.
struct WBlock {
  __m256i x[4], y[4];  // unsigned quants, interleaved as ActBlock
  __m256i sp[4];       // dword L of sp[p]: (sc(4p + L/4), sc(4p + 2 + L/4)) as int16
  __m256i corr;        // dword L: (-32 sc(2L), -32 sc(2L + 1)) as int16
  float d;
};

inline void decode(const uint8_t* x, WBlock& w) {
  __m256i q[8];
  kq_lanes::Q6::quants(x, q);
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p) {
    w.x[p] = _mm256_unpacklo_epi32(q[2 * p], q[2 * p + 1]);
    w.y[p] = _mm256_unpackhi_epi32(q[2 * p], q[2 * p + 1]);
  }
  const __m256i s16 = _mm256_cvtepi8_epi16(kq_lanes::load16(x + offsetof(BlockQ6K, scales)));
  const __m256i pick = _mm256_setr_epi16(0, 2, 0, 2, 0, 2, 0, 2, 1, 3, 1, 3, 1, 3, 1, 3);
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p)
    w.sp[p] = _mm256_permutexvar_epi16(_mm256_add_epi16(pick, _mm256_set1_epi16(static_cast<int16_t>(4 * p))), s16);
  w.corr = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(s16, 5));
  w.d = half_at(x + offsetof(BlockQ6K, d));
}

inline __m256 block_step(const WBlock& w, const ActBlock& a, __m256 acc) {
  const __m256i zero = _mm256_setzero_si256();
  __m256i s0 = _mm256_dpwssd_epi32(zero, a.bsums, w.corr), s1 = zero;
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p) {
    const __m256i x = _mm256_dpbusd_epi32(zero, w.x[p], a.x[p]);
    const __m256i y = _mm256_dpbusd_epi32(zero, w.y[p], a.y[p]);
    const __m256i pairs = _mm256_packs_epi32(x, y);
    if (p % 2 == 0) s0 = _mm256_dpwssd_epi32(s0, pairs, w.sp[p]);
    else s1 = _mm256_dpwssd_epi32(s1, pairs, w.sp[p]);
  }
  return _mm256_fmadd_ps(_mm256_set1_ps(a.d * w.d), _mm256_cvtepi32_ps(_mm256_add_epi32(s0, s1)), acc);
}

// Tokens [t0, t0 + nt) (nt <= kMaxTile) against every row; act = the call's repacked tokens.
void rows_tile(int64_t nb, const uint8_t* w8, size_t w_stride, int64_t n_rows, const ActBlock* act, int64_t t0,
               int64_t nt, float* out, size_t out_stride) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const uint8_t* wr = w8 + static_cast<size_t>(r) * w_stride;
    // The next row's block b is prefetched while this row's block b is dotted with the tile.
    const uint8_t* next = r + 1 < n_rows ? wr + w_stride : nullptr;
    __m256 acc[kMaxTile];
    for (int64_t t = 0; t < nt; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      if (next)
        for (size_t off = 0; off < sizeof(BlockQ6K); off += 64)
          _mm_prefetch(reinterpret_cast<const char*>(next + static_cast<size_t>(b) * sizeof(BlockQ6K) + off),
                       _MM_HINT_T0);
      WBlock wb;
      decode(wr + static_cast<size_t>(b) * sizeof(BlockQ6K), wb);
      for (int64_t t = 0; t < nt; ++t) acc[t] = block_step(wb, act[(t0 + t) * nb + b], acc[t]);
    }
    for (int64_t t = 0; t < nt; ++t)
      out[static_cast<size_t>(t0 + t) * out_stride + static_cast<size_t>(r)] = kq_lanes::hsum8(acc[t]);
  }
}

}  // namespace

void gemm_q6_k_rows_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                         int64_t n_tok, float* out, size_t out_stride) {
  const int64_t nb = k / kQK_K;
  thread_local std::vector<ActBlock> act;
  act.resize(static_cast<size_t>(n_tok * nb));
  repack_acts(static_cast<const uint8_t*>(a), a_stride, n_tok, nb, act.data());
  for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxTile)
    rows_tile(nb, static_cast<const uint8_t*>(w), w_stride, n_rows, act.data(), t0, std::min(kMaxTile, n_tok - t0),
              out, out_stride);
}

}  // namespace baton::kernels::avx512
