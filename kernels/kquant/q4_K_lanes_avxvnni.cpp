// Q4_K prompt batches in the AVX-VNNI tier: the token-parallel scheme of kquant_vnni_avx512.cpp
// in ymm. Lanes are tokens: the Q8_K activations of 8 tokens are transposed once per matmul so
// that one ymm holds the same 4 signed bytes of all 8 tokens; each weight row's super-blocks are
// unpacked once per call (kquant_unpack.h) and each 4-byte group of unsigned quants is broadcast
// into vpdpbusd, which adds 32 products per instruction. The 6-bit sub-block scale is applied
// once per 32-element sub-block (vpmulld of the int32 sub-block sum), the mins once per pair of
// bsums (vpdpwssd). The row kernels spend vpmaddubsw + vpdpwssd per 32 products instead.
// Per (row, token, super-block) the integers equal the reference's (exact, any order) and the
// float steps are Q4_K's orders of kquant_kernels.h lane-wise, so the bits are the scalar ones.
#include "kernels/kquant/q4_K_lanes_avxvnni.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "engine/base/aligned_buffer.h"
#include "kernels/kquant/blocks.h"
#include "kernels/core/scratch.h"
#include "kernels/kquant/kernels.h"
#include "kernels/kquant/qx_K_unpack.h"

#if !defined(__AVXVNNI__)
#error "q4_k_lanes_avxvnni.cpp is the AVX-VNNI tier: build with -mavxvnni"
#endif

namespace baton::kernels::avxvnni {
namespace {

using kq::Unpacked;

// Token counts the lanes take; the rest go to the tier's row / 8-token kernels (kquant_avx2.cpp),
// which win there (rows-bench, docs/BENCHMARKS.md): below 5 tokens (4: lanes ~1.3x slower), and
// 8..15, where the 8-token kernel kquant_q4k_tok8.h runs whole groups (gate/up, 8 tokens: lanes
// 0.87x in cache, 0.74x from DRAM). 5..7 tokens: lanes 1.0-1.5x; 16 and more: 1.2-1.5x.
inline bool q4k_lanes_take(int64_t n_tok) { return (n_tok >= 5 && n_tok < 8) || n_tok >= 16; }
constexpr int kQ4kLaneTokens = 8;  // tokens per ymm
// Weight rows R x token groups G per pass: each broadcast weight dword serves G token groups, each
// activation load R rows; R * G = 8 independent vpdpbusd chains hide its latency (4 x 1 ran at
// ~1.1x the AVX2 tier, 4 x 2 at ~1.4x). One token group (5..7 tokens) takes 8 rows instead.

// 8 tokens' activations of one super-block, transposed for vpdpbusd.
struct alignas(64) Q4kLaneActs {
  int8_t q[64][4 * kQ4kLaneTokens];  // q[i][4t + j] = token t's qs[4i + j]
  int32_t bsums[8][kQ4kLaneTokens];  // bsums[p][t] = token t's (bsums[2p], bsums[2p + 1]) as two int16
  float d[kQ4kLaneTokens];           // token t's d (0 for padding lanes)
};

// out[j] lane t = in[t] lane j (8x8 transpose of dwords).
inline void q4k_lanes_transpose8(__m256i r[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    u[4 * i + 0] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  // u[j] (rows 0..3) and u[4 + j] (rows 4..7): element j in the low 128 bits, 4 + j in the high.
  for (int j = 0; j < 4; ++j) {
    r[j] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x20);
    r[4 + j] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x31);
  }
}

// Tokens [t0, t0 + n) (n <= 8; missing lanes are zero) for all nb super-blocks.
void q4k_lanes_repack(const uint8_t* a, size_t a_stride, int64_t t0, int64_t n, int64_t nb, Q4kLaneActs* dst) {
  for (int64_t b = 0; b < nb; ++b) {
    Q4kLaneActs& blk = dst[b];
    const uint8_t* tok[kQ4kLaneTokens];
    for (int t = 0; t < kQ4kLaneTokens; ++t)
      tok[t] = t < n ? a + static_cast<size_t>(t0 + t) * a_stride + static_cast<size_t>(b) * sizeof(BlockQ8K) : nullptr;
    for (int c = 0; c < 8; ++c) {
      __m256i rows[8];
      for (int t = 0; t < 8; ++t)
        rows[t] = tok[t] ? kq::load32(tok[t] + offsetof(BlockQ8K, qs) + 32 * c) : _mm256_setzero_si256();
      q4k_lanes_transpose8(rows);
      for (int j = 0; j < 8; ++j) kq::store32(blk.q[8 * c + j], rows[j]);
    }
    for (int t = 0; t < kQ4kLaneTokens; ++t) {
      int32_t pairs[8] = {};
      float d = 0.0f;
      if (tok[t]) {
        std::memcpy(pairs, tok[t] + offsetof(BlockQ8K, bsums), sizeof pairs);
        std::memcpy(&d, tok[t] + offsetof(BlockQ8K, d), sizeof d);
      }
      for (int p = 0; p < 8; ++p) blk.bsums[p][t] = pairs[p];
      blk.d[t] = d;
    }
  }
}

inline __m256i q4k_lanes_bcast(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// R rows x G token groups: the int32 sum over sub-block s of q * a (8 tokens per lane), scaled by
// sc_s and added to sum[r * G + g]. R * G independent vpdpbusd chains hide its latency.
template <int R, int G>
__attribute__((always_inline)) inline void q4k_lanes_subblock(const Unpacked* const* u, int64_t b,
                                                              const Q4kLaneActs* const* A, int s, __m256i* sum) {
  __m256i part[R * G];
#pragma GCC unroll 8
  for (int j = 0; j < R * G; ++j) part[j] = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int i = 8 * s; i < 8 * s + 8; ++i) {
    __m256i aq[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) aq[g] = _mm256_load_si256(reinterpret_cast<const __m256i*>(A[g][b].q[i]));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256i wq = q4k_lanes_bcast(u[r][b].q + 4 * i);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) part[r * G + g] = _mm256_dpbusd_avx_epi32(part[r * G + g], wq, aq[g]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m256i sc = _mm256_set1_epi32(u[r][b].sc[2 * s]);
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g)
      sum[r * G + g] = _mm256_add_epi32(sum[r * G + g], _mm256_mullo_epi32(part[r * G + g], sc));
  }
}

// mins += sub-block s's min * (bsums[2s] + bsums[2s + 1]) (corr holds each min twice).
template <int R, int G>
__attribute__((always_inline)) inline void q4k_lanes_mins(const Unpacked* const* u, int64_t b,
                                                          const Q4kLaneActs* const* A, int s, __m256i* mins) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    int32_t pair;
    std::memcpy(&pair, u[r][b].corr + 2 * s, 4);
    const __m256i m = _mm256_set1_epi32(pair);
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g)
      mins[r * G + g] = _mm256_dpwssd_avx_epi32(
          mins[r * G + g], _mm256_load_si256(reinterpret_cast<const __m256i*>(A[g][b].bsums[s])), m);
  }
}

// The results of R rows and G token groups (res[r * G + g] = 8 tokens) over all super-blocks.
// kGrouped: one (acc, accm) step per pair of sub-blocks, else one per super-block.
template <int R, int G, bool kGrouped>
void q4k_lanes_group(int64_t nb, const Unpacked* const* u, const Q4kLaneActs* const* A, __m256* res) {
  constexpr int N = R * G;
  __m256 acc[N], accm[N];
  for (int j = 0; j < N; ++j) acc[j] = accm[j] = _mm256_setzero_ps();
  constexpr int kSteps = kGrouped ? 4 : 1, kSubPerStep = 8 / kSteps;
  for (int64_t b = 0; b < nb; ++b) {
    for (int step = 0; step < kSteps; ++step) {
      __m256i sum[N], mins[N];
#pragma GCC unroll 8
      for (int j = 0; j < N; ++j) sum[j] = mins[j] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int s = kSubPerStep * step; s < kSubPerStep * (step + 1); ++s) q4k_lanes_subblock<R, G>(u, b, A, s, sum);
#pragma GCC unroll 8
      for (int s = kSubPerStep * step; s < kSubPerStep * (step + 1); ++s) q4k_lanes_mins<R, G>(u, b, A, s, mins);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256 dw = _mm256_set1_ps(u[r][b].d), dmw = _mm256_set1_ps(u[r][b].dmin);
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
          const __m256 da = _mm256_load_ps(A[g][b].d);
          const int j = r * G + g;
          acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[j]), _mm256_mul_ps(dw, da), acc[j]);
          accm[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mins[j]), _mm256_mul_ps(dmw, da), accm[j]);
        }
      }
    }
  }
  for (int j = 0; j < N; ++j) res[j] = _mm256_sub_ps(acc[j], accm[j]);
}

// The transposed activations, kept across the row chunks of one matmul, and the unpacked rows: one
// per thread and order (a matmul may hold prompt rows in the grouped order and the decode rows of
// other sequences in the split one; one shared copy would be prepared afresh for each in turn).
struct Q4kLanesScratch {
  detail::PreparedActivations key;
  AlignedBuffer acts;
  AlignedBuffer unpacked;
};
template <bool kGrouped>
thread_local Q4kLanesScratch t_q4k_lanes_scratch;

template <bool kGrouped, int R, int G>
void q4k_lanes_gemm(int64_t k, const uint8_t* w8, size_t w_stride, int64_t n_rows, const uint8_t* a8, size_t a_stride,
                    int64_t n_tok, float* out, size_t out_stride) {
  constexpr int W = kQ4kLaneTokens;
  const int64_t nb = k / kQK_K;
  const int64_t n_groups = (n_tok + W - 1) / W;
  Q4kLanesScratch& prepared = t_q4k_lanes_scratch<kGrouped>;
  if (!prepared.key.same_as_last(a8, a_stride, n_tok, nb)) {
    prepared.acts.resize(static_cast<size_t>(n_groups * nb) * sizeof(Q4kLaneActs));
    for (int64_t g = 0; g < n_groups; ++g)
      q4k_lanes_repack(a8, a_stride, W * g, std::min<int64_t>(W, n_tok - W * g), nb,
                       prepared.acts.as<Q4kLaneActs>() + g * nb);
  }
  const Q4kLaneActs* act = prepared.acts.as<Q4kLaneActs>();
  prepared.unpacked.resize(static_cast<size_t>(R * nb) * sizeof(Unpacked));
  auto* unpacked = prepared.unpacked.as<Unpacked>();

  for (int64_t r0 = 0; r0 < n_rows; r0 += R) {
    const int64_t nr = std::min<int64_t>(R, n_rows - r0);
    const Unpacked* u[R];
    for (int r = 0; r < R; ++r) {
      if (r >= nr) {  // pad the group with copies of its last row; those results are dropped
        u[r] = u[nr - 1];
        continue;
      }
      Unpacked* ur = unpacked + r * nb;
      u[r] = ur;
      const uint8_t* row = w8 + static_cast<size_t>(r0 + r) * w_stride;
      for (int64_t b = 0; b < nb; ++b) kq::FmtQ4K::unpack(row + static_cast<size_t>(b) * sizeof(BlockQ4K), ur[b]);
    }
    // G token groups at a time; a last odd group runs alone.
    for (int64_t g = 0; g < n_groups;) {
      const int gn = n_groups - g >= G ? G : 1;
      const Q4kLaneActs* A[G];
      for (int i = 0; i < G; ++i) A[i] = act + (g + std::min(i, gn - 1)) * nb;
      __m256 res_v[R * G];
      if (gn == G) q4k_lanes_group<R, G, kGrouped>(nb, u, A, res_v);
      else q4k_lanes_group<R, 1, kGrouped>(nb, u, A, res_v);
      for (int i = 0; i < gn; ++i) {
        alignas(32) float res[R][W];
        for (int r = 0; r < R; ++r) _mm256_store_ps(res[r], res_v[r * gn + i]);
        const int64_t t_base = W * (g + i), nt = std::min<int64_t>(W, n_tok - t_base);
        for (int64_t t = 0; t < nt; ++t)
          for (int64_t r = 0; r < nr; ++r)
            out[static_cast<size_t>(t_base + t) * out_stride + static_cast<size_t>(r0 + r)] = res[r][t];
      }
      g += gn;
    }
  }
}

// 8 rows x 1 token group for up to 8 tokens, else 4 rows x 2 token groups.
template <bool kGrouped>
void q4k_lanes_run(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                   int64_t n_tok, float* out, size_t out_stride) {
  const auto* w8 = static_cast<const uint8_t*>(w);
  const auto* a8 = static_cast<const uint8_t*>(a);
  if (n_tok <= kQ4kLaneTokens)
    q4k_lanes_gemm<kGrouped, 8, 1>(k, w8, w_stride, n_rows, a8, a_stride, n_tok, out, out_stride);
  else q4k_lanes_gemm<kGrouped, 4, 2>(k, w8, w_stride, n_rows, a8, a_stride, n_tok, out, out_stride);
}

}  // namespace

void gemm_q4_k_lanes(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                     int64_t n_tok, float* out, size_t out_stride) {
  if (!q4k_lanes_take(n_tok)) gemm_q4_k(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
  else q4k_lanes_run<false>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

void gemm_q4_k_grouped_lanes(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                             int64_t n_tok, float* out, size_t out_stride) {
  if (!q4k_lanes_take(n_tok)) gemm_q4_k_grouped(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
  else q4k_lanes_run<true>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

}  // namespace baton::kernels::avxvnni
