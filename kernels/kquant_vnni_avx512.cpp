// AVX-512 VNNI K-quant gemm for batches (prefill): the token-parallel kernel. Lanes are
// tokens: the Q8_K activations of 16 tokens are repacked once per call so that one zmm holds
// the same 4 bytes (biased to unsigned, +128) of all 16 tokens; a weight row's super-block is
// unpacked once per call and each 4-byte group of it is broadcast into vpdpbusd, which adds
// 64 products per instruction. Per super-block and sub-block s the exact integer
//   sum_s sc_s * sum (a + 128) q  -  128 * sum_s sc_s * sum q  (+ corr terms from the bsums)
// equals the row kernel's sum, and the float steps are those of Q4_K's orders in
// kquant_kernels.h, lane-wise, so results are bit-identical to every other variant. (Q5_K's
// 8-lane order has no token-parallel kernel; Q2_K/Q3_K/Q6_K are in kq_lanes_*.)
// Decode (n_tok = 1) runs the register-direct row kernel of kquant_rowdot.h with vpdpbusd; other
// small batches (n_tok < kMinTokens) go to the row-parallel AVX-512 kernel.
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <type_traits>

#pragma GCC target("avx512vnni")

#include "kernels/blocks_k.h"
#include "kernels/kquant_kernels.h"
#include "kernels/kquant_rowdot.h"
#include "kernels/kquant_unpack.h"
#include "kernels/type_ops.h"

namespace baton::kernels::avx512 {
namespace {

using kq::Kind;
using kq::Unpacked;

constexpr int64_t kMinTokens = 8;  // below this, too many of the 16 token lanes would idle
constexpr int kRows = 4;           // weight rows computed together (share each activation load)

// 16 tokens' activations of one super-block, transposed for vpdpbusd.
struct alignas(64) ActBlock {
  uint8_t q[64][64];    // q[i][4t + j] = token t's qs[4i + j] + 128
  int32_t bsums[8][16]; // bsums[p][t] = token t's (bsums[2p], bsums[2p + 1]) as two int16
  float d[16];          // token t's d (0 for padding lanes)
};

struct Scratch {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data;
  size_t size = 0;

  // nullptr when the allocation fails (the caller falls back to the row kernel).
  uint8_t* get(size_t bytes) {
    if (bytes > size) {
      const size_t rounded = (bytes + 4095) / 4096 * 4096;
      data.reset(static_cast<uint8_t*>(std::aligned_alloc(64, rounded)));
      size = data ? rounded : 0;
    }
    return data.get();
  }
};

// 16x16 transpose of 32-bit elements: out[m] lane t = in[t] lane m.
void transpose16(const __m512i in[16], __m512i out[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(in[2 * i], in[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(in[2 * i], in[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  // u[4i + j], 128-bit lane L = element 4L + j of rows 4i..4i+3.
  for (int j = 0; j < 4; ++j) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88), v1 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xDD);
    const __m512i w0 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88), w1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xDD);
    out[j] = _mm512_shuffle_i32x4(v0, w0, 0x88);
    out[4 + j] = _mm512_shuffle_i32x4(v1, w1, 0x88);
    out[8 + j] = _mm512_shuffle_i32x4(v0, w0, 0xDD);
    out[12 + j] = _mm512_shuffle_i32x4(v1, w1, 0xDD);
  }
}

// Repacks tokens [t0, t0 + n) (n <= 16; missing lanes are zero) for all nb super-blocks.
void repack_tokens(const uint8_t* a, size_t a_stride, int64_t t0, int64_t n, int64_t nb, ActBlock* dst) {
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t b = 0; b < nb; ++b) {
    ActBlock& blk = dst[b];
    const uint8_t* tok[16];
    for (int t = 0; t < 16; ++t)
      tok[t] = t < n ? a + static_cast<size_t>(t0 + t) * a_stride + b * static_cast<int64_t>(sizeof(BlockQ8K)) : nullptr;
    for (int c = 0; c < 4; ++c) {
      __m512i rows[16], cols[16];
      for (int t = 0; t < 16; ++t)
        rows[t] = tok[t] ? _mm512_xor_si512(_mm512_loadu_si512(tok[t] + offsetof(BlockQ8K, qs) + 64 * c), bias) : bias;
      transpose16(rows, cols);
      for (int i = 0; i < 16; ++i) _mm512_store_si512(blk.q[16 * c + i], cols[i]);
    }
    for (int t = 0; t < 16; ++t) {
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

// sum_s sc_s * sum_{e in s} q_e of one unpacked super-block: pair sums of the quants
// (vpmaddubsw by 1), times the scale of their sub-block (vpdpwssd), summed.
int32_t scale_weighted_qsum(const Unpacked& u) {
  static const __m512i kScaleIndex[4] = {
      _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0),
      _mm512_set_epi16(7, 7, 7, 7, 7, 7, 7, 7, 6, 6, 6, 6, 6, 6, 6, 6, 5, 5, 5, 5, 5, 5, 5, 5, 4, 4, 4, 4, 4, 4, 4, 4),
      _mm512_set_epi16(11, 11, 11, 11, 11, 11, 11, 11, 10, 10, 10, 10, 10, 10, 10, 10, 9, 9, 9, 9, 9, 9, 9, 9, 8, 8, 8,
                       8, 8, 8, 8, 8),
      _mm512_set_epi16(15, 15, 15, 15, 15, 15, 15, 15, 14, 14, 14, 14, 14, 14, 14, 14, 13, 13, 13, 13, 13, 13, 13, 13,
                       12, 12, 12, 12, 12, 12, 12, 12),
  };
  const __m512i sc = _mm512_castsi256_si512(_mm256_load_si256(reinterpret_cast<const __m256i*>(u.sc)));
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i acc = _mm512_setzero_si512();
  for (int c = 0; c < 4; ++c) {
    const __m512i pairs = _mm512_maddubs_epi16(_mm512_load_si512(u.q + 64 * c), ones);
    acc = _mm512_dpwssd_epi32(acc, pairs, _mm512_permutexvar_epi16(kScaleIndex[c], sc));
  }
  return _mm512_reduce_add_epi32(acc);
}

// scale_weighted_qsum split by 64-element pair of sub-blocks (Q4_K/Q5_K: iteration c of the loop
// above covers sub-blocks 2c and 2c + 1).
void scale_weighted_qsum_pairs(const Unpacked& u, int32_t out[4]) {
  const __m512i ones = _mm512_set1_epi8(1);
  alignas(64) int16_t sc[32];
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 32; ++i) sc[i] = u.sc[4 * c + i / 8];  // 8 pairs of quants per 16-element sub-block
    const __m512i pairs = _mm512_maddubs_epi16(_mm512_load_si512(u.q + 64 * c), ones);
    out[c] = _mm512_reduce_add_epi32(_mm512_madd_epi16(pairs, _mm512_load_si512(sc)));
  }
}

inline __m512i broadcast_dword(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// The kRows x 16 results of one row group and token group over all super-blocks.
// Q4_K's Order::kSplit (kquant_rows256.h): two chains, subtracted at the end.
// kGrouped: Q4_K's Order::kGrouped (the same chains, one step per 64 elements); qsum then holds
// 4 values per super-block (scale_weighted_qsum_pairs).
template <class Fmt, bool kGrouped = false>
void compute_group(int64_t nb, const Unpacked* const* u, const int32_t* const* qsum, const ActBlock* act,
                   __m512 acc[kRows]) {
  __m512 accm[kRows];
  for (int r = 0; r < kRows; ++r) accm[r] = _mm512_setzero_ps();
  // Q4_K/Q5_K scales are per 32 elements: one multiply per 8 dwords instead of 4.
  constexpr int kDwordsPerScale = Fmt::kScaleElems / 4;
  for (int r = 0; r < kRows; ++r) acc[r] = _mm512_setzero_ps();
  if constexpr (kGrouped) {
    static_assert(kDwordsPerScale == 8 && Fmt::kKind == Kind::kMins);
    for (int64_t b = 0; b < nb; ++b) {
      const ActBlock& A = act[b];
      const __m512 da = _mm512_load_ps(A.d);
      for (int pr = 0; pr < 4; ++pr) {
        __m512i sum[kRows], mins[kRows];
        for (int r = 0; r < kRows; ++r) {
          sum[r] = _mm512_set1_epi32(-128 * qsum[r][4 * b + pr]);
          mins[r] = _mm512_setzero_si512();
        }
        for (int s = 2 * pr; s < 2 * pr + 2; ++s) {
          __m512i part[kRows];
          for (int r = 0; r < kRows; ++r) part[r] = _mm512_setzero_si512();
          for (int i = s * kDwordsPerScale; i < (s + 1) * kDwordsPerScale; ++i) {
            const __m512i aq = _mm512_load_si512(A.q[i]);
            for (int r = 0; r < kRows; ++r) part[r] = _mm512_dpbusd_epi32(part[r], aq, broadcast_dword(u[r][b].q + 4 * i));
          }
          for (int r = 0; r < kRows; ++r)
            sum[r] = _mm512_add_epi32(sum[r], _mm512_mullo_epi32(part[r], _mm512_set1_epi32(u[r][b].sc[2 * s])));
          const __m512i bs = _mm512_load_si512(A.bsums[s]);
          for (int r = 0; r < kRows; ++r) mins[r] = _mm512_dpwssd_epi32(mins[r], bs, broadcast_dword(u[r][b].corr + 2 * s));
        }
        for (int r = 0; r < kRows; ++r) {
          acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[r]), _mm512_mul_ps(_mm512_set1_ps(u[r][b].d), da), acc[r]);
          accm[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(mins[r]), _mm512_mul_ps(_mm512_set1_ps(u[r][b].dmin), da), accm[r]);
        }
      }
    }
    for (int r = 0; r < kRows; ++r) acc[r] = _mm512_sub_ps(acc[r], accm[r]);
    return;
  }
  for (int64_t b = 0; b < nb; ++b) {
    const ActBlock& A = act[b];
    __m512i sum[kRows], mins[kRows];
    for (int r = 0; r < kRows; ++r) {
      sum[r] = _mm512_set1_epi32(-128 * qsum[r][b]);
      mins[r] = _mm512_setzero_si512();
    }
    for (int s = 0; s < 64 / kDwordsPerScale; ++s) {
      __m512i part[kRows];
      for (int r = 0; r < kRows; ++r) part[r] = _mm512_setzero_si512();
      for (int i = s * kDwordsPerScale; i < (s + 1) * kDwordsPerScale; ++i) {
        const __m512i aq = _mm512_load_si512(A.q[i]);
        for (int r = 0; r < kRows; ++r) part[r] = _mm512_dpbusd_epi32(part[r], aq, broadcast_dword(u[r][b].q + 4 * i));
      }
      const int sub = s * kDwordsPerScale / 4;
      for (int r = 0; r < kRows; ++r)
        sum[r] = _mm512_add_epi32(sum[r], _mm512_mullo_epi32(part[r], _mm512_set1_epi32(u[r][b].sc[sub])));
    }
    for (int p = 0; p < 8; ++p) {
      const __m512i bs = _mm512_load_si512(A.bsums[p]);
      for (int r = 0; r < kRows; ++r) mins[r] = _mm512_dpwssd_epi32(mins[r], bs, broadcast_dword(u[r][b].corr + 2 * p));
    }
    const __m512 da = _mm512_load_ps(A.d);
    for (int r = 0; r < kRows; ++r) {
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[r]), _mm512_mul_ps(_mm512_set1_ps(u[r][b].d), da), acc[r]);
      accm[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(mins[r]), _mm512_mul_ps(_mm512_set1_ps(u[r][b].dmin), da), accm[r]);
    }
  }
  for (int r = 0; r < kRows; ++r) acc[r] = _mm512_sub_ps(acc[r], accm[r]);
}

thread_local Scratch t_scratch;

// false when the scratch could not be allocated (nothing was written).
template <class Fmt, bool kGrouped = false>
bool gemm_tokens(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                 int64_t n_tok, float* out, size_t out_stride) {
  const int64_t nb = k / kQK_K;
  const int64_t n_groups = (n_tok + 15) / 16;
  const size_t act_bytes = static_cast<size_t>(n_groups * nb) * sizeof(ActBlock);
  const size_t unpacked_bytes = static_cast<size_t>(kRows * nb) * sizeof(Unpacked);
  constexpr int64_t kQsumsPerBlock = kGrouped ? 4 : 1;
  const size_t qsum_bytes = (static_cast<size_t>(kRows * nb * kQsumsPerBlock) * sizeof(int32_t) + 63) / 64 * 64;
  uint8_t* scratch = t_scratch.get(act_bytes + unpacked_bytes + qsum_bytes);
  if (!scratch) return false;
  auto* act = reinterpret_cast<ActBlock*>(scratch);
  auto* unpacked = reinterpret_cast<Unpacked*>(scratch + act_bytes);
  auto* qsums = reinterpret_cast<int32_t*>(scratch + act_bytes + unpacked_bytes);

  const uint8_t* a8 = static_cast<const uint8_t*>(a);
  for (int64_t g = 0; g < n_groups; ++g)
    repack_tokens(a8, a_stride, 16 * g, std::min<int64_t>(16, n_tok - 16 * g), nb, act + g * nb);

  const uint8_t* w8 = static_cast<const uint8_t*>(w);
  for (int64_t r0 = 0; r0 < n_rows; r0 += kRows) {
    const int64_t nr = std::min<int64_t>(kRows, n_rows - r0);
    const Unpacked* u[kRows];
    const int32_t* qs[kRows];
    for (int r = 0; r < kRows; ++r) {
      Unpacked* ur = unpacked + r * nb;
      int32_t* qr = qsums + r * nb * kQsumsPerBlock;
      u[r] = ur;
      qs[r] = qr;
      if (r >= nr) {  // pad the group with copies of its last row; those results are dropped
        u[r] = u[nr - 1];
        qs[r] = qs[nr - 1];
        continue;
      }
      const uint8_t* row = w8 + static_cast<size_t>(r0 + r) * w_stride;
      for (int64_t b = 0; b < nb; ++b) {
        Fmt::unpack(row + b * static_cast<int64_t>(Fmt::kBytes), ur[b]);
        if constexpr (kGrouped)
          scale_weighted_qsum_pairs(ur[b], qr + 4 * b);
        else
          qr[b] = scale_weighted_qsum(ur[b]);
      }
    }
    for (int64_t g = 0; g < n_groups; ++g) {
      __m512 acc[kRows];
      compute_group<Fmt, kGrouped>(nb, u, qs, act + g * nb, acc);
      alignas(64) float res[kRows][16];
      for (int r = 0; r < kRows; ++r) _mm512_store_ps(res[r], acc[r]);
      const int64_t nt = std::min<int64_t>(16, n_tok - 16 * g);
      for (int64_t t = 0; t < nt; ++t)
        for (int64_t r = 0; r < nr; ++r)
          out[static_cast<size_t>(16 * g + t) * out_stride + static_cast<size_t>(r0 + r)] = res[r][t];
    }
  }
  return true;
}

// vpdpbusd: 4 unsigned weight bytes times 4 signed activation bytes, summed per dword.
struct DotVnni {
  static __m256i dot(__m256i q, __m256i a) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), q, a); }
};

template <class Fmt, class RowFmt>
void gemm_vnni(GemmFn row_kernel, int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  // Q5_K's order keeps 8 lanes per output (Order::kLanes), which the token-lane kernel has not.
  if constexpr (!std::is_same_v<Fmt, kq::FmtQ5K>)
    if (n_tok >= kMinTokens &&
        gemm_tokens<Fmt>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride))
      return;
  if constexpr (std::is_same_v<Fmt, kq::FmtQ5K>) {
    row_kernel(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
    return;
  }
  if (n_tok <= kq::kRowdotMaxTokens &&
      kq::gemm_rowdot<RowFmt, DotVnni>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride))
    return;
  row_kernel(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

}  // namespace

void gemm_q4_k_vnni(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, float* out,
                    size_t os) {
  gemm_vnni<kq::FmtQ4K, kq::RowQ4K>(gemm_q4_k, k, w, ws, nr, a, as, nt, out, os);
}
// Q4_K's grouped order (TypeOps::gemm_grouped): the token-parallel kernel for batches, else the
// row-parallel AVX-512 kernel.
void gemm_q4_k_grouped_vnni(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt,
                            float* out, size_t os) {
  if (nt >= kMinTokens && gemm_tokens<kq::FmtQ4K, true>(k, w, ws, nr, a, as, nt, out, os)) return;
  gemm_q4_k_grouped(k, w, ws, nr, a, as, nt, out, os);
}
void gemm_q5_k_vnni(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, float* out,
                    size_t os) {
  gemm_vnni<kq::FmtQ5K, kq::RowQ5K>(gemm_q5_k, k, w, ws, nr, a, as, nt, out, os);
}

}  // namespace baton::kernels::avx512
