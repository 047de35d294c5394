// AVX-512 VNNI K-quant gemm for batches: the token-parallel kernel. Lanes are tokens: the Q8_K
// activations of W tokens (16 per zmm for n_tok > 8, 8 per ymm for n_tok <= 8 — the decode rows
// of a continuous batch) are repacked once per call so that one vector holds the same 4 signed
// bytes of all W tokens; a weight row's super-block is unpacked once per call and each 4-byte
// group of it (unsigned quants) is broadcast into vpdpbusd, which adds 4 * W products per
// instruction. Per super-block and sub-block s the exact integers sum_s sc_s * sum q a and the
// bsums terms equal the row kernel's, and the float steps are those of Q4_K's orders in
// kquant/kernels.h, lane-wise, so results are bit-identical to every other variant. (Q5_K's
// 8-lane order has no token-parallel kernel; Q2_K/Q3_K/Q6_K are in kquant/qx_K_gemm_lanes_*.)
// Decode (n_tok = 1) runs the register-direct row kernel of kquant/q45_K_gemm_rowdot.h with vpdpbusd; other
// small batches (n_tok < kMinTokens) go to the row kernels as well.
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <type_traits>

#pragma GCC target("avx512vnni")

#include "kernels/kquant/blocks.h"
#include "kernels/kquant/kernels.h"
#include "kernels/kquant/q45_K_gemm_rowdot.h"
#include "kernels/kquant/qx_K_unpack.h"
#include "kernels/core/type_ops.h"

namespace baton::kernels::avx512 {
namespace {

using kq::Kind;
using kq::Unpacked;

// Token lanes per vector: 16 (zmm) for larger batches, 8 (ymm, AVX512VL) for n_tok <= 8 — the
// decode rows of a continuous batch. Zen 4 runs a zmm op as two ymm halves, so 8 lanes in a ymm
// cost half of 16 lanes in a zmm: no lane idles for 8 tokens.
// Below kMinTokens the row kernels win (kquant/q45_K_gemm_rowdot.h up to kRowdotMaxTokens, n_tok = 1
// above all): the 8-lane kernel costs the same for any n_tok <= 8.
constexpr int64_t kMinTokens = 5;
// Weight rows computed together (they share each activation load): 4 with 16 lanes (zmm), 8 with
// 8 lanes (ymm, 32 registers: 8 rows x (part, sum) fit).
template <int W>
constexpr int kRows = W == 8 ? 8 : 4;

template <int W>
struct Vec;
template <>
struct Vec<16> {
  using I = __m512i;
  using F = __m512;
  static I zero() { return _mm512_setzero_si512(); }
  static I load(const void* p) { return _mm512_load_si512(p); }
  static I set1(int32_t v) { return _mm512_set1_epi32(v); }
  static I add(I a, I b) { return _mm512_add_epi32(a, b); }
  static I mullo(I a, I b) { return _mm512_mullo_epi32(a, b); }
  static I dpbusd(I acc, I a, I b) { return _mm512_dpbusd_epi32(acc, a, b); }
  static I dpwssd(I acc, I a, I b) { return _mm512_dpwssd_epi32(acc, a, b); }
  static I and_(I a, I b) { return _mm512_and_si512(a, b); }
  static I srli4(I a) { return _mm512_srli_epi32(a, 4); }
  static F fzero() { return _mm512_setzero_ps(); }
  static F fload(const float* p) { return _mm512_load_ps(p); }
  static F fset1(float v) { return _mm512_set1_ps(v); }
  static F cvt(I a) { return _mm512_cvtepi32_ps(a); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static void store(float* p, F v) { _mm512_store_ps(p, v); }
};
template <>
struct Vec<8> {
  using I = __m256i;
  using F = __m256;
  static I zero() { return _mm256_setzero_si256(); }
  static I load(const void* p) { return _mm256_load_si256(static_cast<const __m256i*>(p)); }
  static I set1(int32_t v) { return _mm256_set1_epi32(v); }
  static I add(I a, I b) { return _mm256_add_epi32(a, b); }
  static I mullo(I a, I b) { return _mm256_mullo_epi32(a, b); }
  static I dpbusd(I acc, I a, I b) { return _mm256_dpbusd_epi32(acc, a, b); }
  static I dpwssd(I acc, I a, I b) { return _mm256_dpwssd_epi32(acc, a, b); }
  static I and_(I a, I b) { return _mm256_and_si256(a, b); }
  static I srli4(I a) { return _mm256_srli_epi32(a, 4); }
  static F fzero() { return _mm256_setzero_ps(); }
  static F fload(const float* p) { return _mm256_load_ps(p); }
  static F fset1(float v) { return _mm256_set1_ps(v); }
  static F cvt(I a) { return _mm256_cvtepi32_ps(a); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static void store(float* p, F v) { _mm256_store_ps(p, v); }
};

// W tokens' activations of one super-block, transposed for vpdpbusd.
template <int W>
struct alignas(64) ActBlock {
  int8_t q[64][4 * W];  // q[i][4t + j] = token t's qs[4i + j]
  int32_t bsums[8][W];  // bsums[p][t] = token t's (bsums[2p], bsums[2p + 1]) as two int16
  float d[W];           // token t's d (0 for padding lanes)
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
__attribute__((always_inline)) inline void transpose16(const __m512i in[16], __m512i out[16]) {
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
    const __m512i w0 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88),
                  w1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xDD);
    out[j] = _mm512_shuffle_i32x4(v0, w0, 0x88);
    out[4 + j] = _mm512_shuffle_i32x4(v1, w1, 0x88);
    out[8 + j] = _mm512_shuffle_i32x4(v0, w0, 0xDD);
    out[12 + j] = _mm512_shuffle_i32x4(v1, w1, 0xDD);
  }
}

// Repacks tokens [t0, t0 + n) (n <= 16; missing lanes are zero) for all nb super-blocks.
void repack_tokens(const uint8_t* a, size_t a_stride, int64_t t0, int64_t n, int64_t nb, ActBlock<16>* dst) {
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t b = 0; b < nb; ++b) {
    ActBlock<16>& blk = dst[b];
    const uint8_t* tok[16];
    for (int t = 0; t < 16; ++t)
      tok[t] =
          t < n ? a + static_cast<size_t>(t0 + t) * a_stride + b * static_cast<int64_t>(sizeof(BlockQ8K)) : nullptr;
    for (int c = 0; c < 4; ++c) {
      __m512i rows[16], cols[16];
      for (int t = 0; t < 16; ++t)
        rows[t] = tok[t] ? _mm512_loadu_si512(tok[t] + offsetof(BlockQ8K, qs) + 64 * c) : zero;
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

// The same for 8 tokens (n <= 8): a plain byte transpose, cheap next to the gemm it feeds.
void repack_tokens(const uint8_t* a, size_t a_stride, int64_t t0, int64_t n, int64_t nb, ActBlock<8>* dst) {
  for (int64_t b = 0; b < nb; ++b) {
    ActBlock<8>& blk = dst[b];
    for (int t = 0; t < 8; ++t) {
      uint32_t words[64];
      int32_t pairs[8] = {};
      float d = 0.0f;
      if (t < n) {
        const uint8_t* tok = a + static_cast<size_t>(t0 + t) * a_stride + b * static_cast<int64_t>(sizeof(BlockQ8K));
        std::memcpy(words, tok + offsetof(BlockQ8K, qs), sizeof words);
        std::memcpy(pairs, tok + offsetof(BlockQ8K, bsums), sizeof pairs);
        std::memcpy(&d, tok + offsetof(BlockQ8K, d), sizeof d);
      } else {
        std::memset(words, 0, sizeof words);
      }
      for (int i = 0; i < 64; ++i) std::memcpy(&blk.q[i][4 * t], &words[i], 4);
      for (int p = 0; p < 8; ++p) blk.bsums[p][t] = pairs[p];
      blk.d[t] = d;
    }
  }
}

inline int32_t dword_at(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The kRows<W> x W results of one row group and token group over all super-blocks.
// Q4_K's Order::kSplit (kquant/qx_K_gemm_rows256.h): two chains, subtracted at the end.
// kGrouped: Q4_K's Order::kGrouped (the same chains, one step per 64 elements).
template <class Fmt, int W, bool kGrouped = false>
void compute_group(int64_t nb, const Unpacked* const* u, const ActBlock<W>* act, typename Vec<W>::F acc[kRows<W>],
                   const uint8_t* pf, size_t pf_bytes) {
  constexpr int R = kRows<W>;
  // Prefetch the next row group's weights (pf, pf_bytes), a slice per super-block, so that its
  // unpack does not wait for DRAM.
  const size_t pf_step = (pf_bytes / static_cast<size_t>(nb) + 63) / 64 * 64;
  auto prefetch = [&](int64_t b) {
    const size_t begin = static_cast<size_t>(b) * pf_step, end = std::min(pf_bytes, begin + pf_step);
    for (size_t off = begin; off < end; off += 64) _mm_prefetch(reinterpret_cast<const char*>(pf + off), _MM_HINT_T0);
  };
  using V = Vec<W>;
  using I = typename V::I;
  typename V::F accm[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) accm[r] = V::fzero();
  // Q4_K/Q5_K scales are per 32 elements: one multiply per 8 dwords instead of 4.
  constexpr int kDwordsPerScale = Fmt::kScaleElems / 4;
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = V::fzero();
  if constexpr (kGrouped) {
    static_assert(kDwordsPerScale == 8 && Fmt::kKind == Kind::kMins);
    for (int64_t b = 0; b < nb; ++b) {
      prefetch(b);
      const ActBlock<W>& A = act[b];
      const auto da = V::fload(A.d);
      for (int pr = 0; pr < 4; ++pr) {
        I sum[R], mins[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          sum[r] = V::zero();
          mins[r] = V::zero();
        }
        for (int s = 2 * pr; s < 2 * pr + 2; ++s) {
          I part[R];
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) part[r] = V::zero();
#pragma GCC unroll 8
          for (int i = s * kDwordsPerScale; i < (s + 1) * kDwordsPerScale; ++i) {
            const I aq = V::load(A.q[i]);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) part[r] = V::dpbusd(part[r], V::set1(dword_at(u[r][b].q + 4 * i)), aq);
          }
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) sum[r] = V::add(sum[r], V::mullo(part[r], V::set1(u[r][b].sc[2 * s])));
          const I bs = V::load(A.bsums[s]);
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) mins[r] = V::dpwssd(mins[r], bs, V::set1(dword_at(u[r][b].corr + 2 * s)));
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          acc[r] = V::fmadd(V::cvt(sum[r]), V::mul(V::fset1(u[r][b].d), da), acc[r]);
          accm[r] = V::fmadd(V::cvt(mins[r]), V::mul(V::fset1(u[r][b].dmin), da), accm[r]);
        }
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r] = V::sub(acc[r], accm[r]);
    return;
  }
  for (int64_t b = 0; b < nb; ++b) {
    prefetch(b);
    const ActBlock<W>& A = act[b];
    I sum[R], mins[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      sum[r] = V::zero();
      mins[r] = V::zero();
    }
#pragma GCC unroll 8
    for (int s = 0; s < 64 / kDwordsPerScale; ++s) {
      I part[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) part[r] = V::zero();
#pragma GCC unroll 8
      for (int i = s * kDwordsPerScale; i < (s + 1) * kDwordsPerScale; ++i) {
        const I aq = V::load(A.q[i]);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const I wq = V::set1(dword_at(u[r][b].q + 4 * i));
          part[r] = V::dpbusd(part[r], wq, aq);
        }
      }
      const int sub = s * kDwordsPerScale / 4;
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) sum[r] = V::add(sum[r], V::mullo(part[r], V::set1(u[r][b].sc[sub])));
    }
#pragma GCC unroll 8
    for (int p = 0; p < 8; ++p) {
      const I bs = V::load(A.bsums[p]);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) mins[r] = V::dpwssd(mins[r], bs, V::set1(dword_at(u[r][b].corr + 2 * p)));
    }
    const auto da = V::fload(A.d);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      acc[r] = V::fmadd(V::cvt(sum[r]), V::mul(V::fset1(u[r][b].d), da), acc[r]);
      accm[r] = V::fmadd(V::cvt(mins[r]), V::mul(V::fset1(u[r][b].dmin), da), accm[r]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = V::sub(acc[r], accm[r]);
}

thread_local Scratch t_scratch;

// false when the scratch could not be allocated (nothing was written).
template <class Fmt, int W, bool kGrouped = false>
bool gemm_tokens_w(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                   int64_t n_tok, float* out, size_t out_stride) {
  constexpr int R = kRows<W>;
  const int64_t nb = k / kQK_K;
  const int64_t n_groups = (n_tok + W - 1) / W;
  const size_t act_bytes = static_cast<size_t>(n_groups * nb) * sizeof(ActBlock<W>);
  const size_t unpacked_bytes = static_cast<size_t>(R * nb) * sizeof(Unpacked);
  uint8_t* scratch = t_scratch.get(act_bytes + unpacked_bytes);
  if (!scratch) return false;
  auto* act = reinterpret_cast<ActBlock<W>*>(scratch);
  auto* unpacked = reinterpret_cast<Unpacked*>(scratch + act_bytes);

  const uint8_t* a8 = static_cast<const uint8_t*>(a);
  for (int64_t g = 0; g < n_groups; ++g)
    repack_tokens(a8, a_stride, W * g, std::min<int64_t>(W, n_tok - W * g), nb, act + g * nb);

  const uint8_t* w8 = static_cast<const uint8_t*>(w);
  for (int64_t r0 = 0; r0 < n_rows; r0 += R) {
    const int64_t nr = std::min<int64_t>(R, n_rows - r0);
    const Unpacked* u[R];
    for (int r = 0; r < R; ++r) {
      Unpacked* ur = unpacked + r * nb;
      u[r] = ur;
      if (r >= nr) {  // pad the group with copies of its last row; those results are dropped
        u[r] = u[nr - 1];
        continue;
      }
      const uint8_t* row = w8 + static_cast<size_t>(r0 + r) * w_stride;
      for (int64_t b = 0; b < nb; ++b) Fmt::unpack(row + b * static_cast<int64_t>(Fmt::kBytes), ur[b]);
    }
    const int64_t next_rows = std::min<int64_t>(R, n_rows - r0 - nr);
    const uint8_t* next = w8 + static_cast<size_t>(r0 + nr) * w_stride;
    for (int64_t g = 0; g < n_groups; ++g) {
      typename Vec<W>::F acc[R];
      const size_t pf_bytes = g == 0 && next_rows > 0 ? static_cast<size_t>(next_rows) * w_stride : 0;
      compute_group<Fmt, W, kGrouped>(nb, u, act + g * nb, acc, next, pf_bytes);
      alignas(64) float res[R][W];
      for (int r = 0; r < R; ++r) Vec<W>::store(res[r], acc[r]);
      const int64_t nt = std::min<int64_t>(W, n_tok - W * g);
      for (int64_t t = 0; t < nt; ++t)
        for (int64_t r = 0; r < nr; ++r)
          out[static_cast<size_t>(W * g + t) * out_stride + static_cast<size_t>(r0 + r)] = res[r][t];
    }
  }
  return true;
}

// 8 token lanes for n_tok <= 8, else 16.
template <class Fmt, bool kGrouped = false>
bool gemm_tokens(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                 int64_t n_tok, float* out, size_t out_stride) {
  if (n_tok <= 8) return gemm_tokens_w<Fmt, 8, kGrouped>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
  return gemm_tokens_w<Fmt, 16, kGrouped>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

template <class Fmt>
void gemm_vnni(GemmFn row_kernel, int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  // Q5_K's order keeps 8 lanes per output (Order::kLanes), which the token-lane kernel has not.
  // The rest goes to row_kernel (gemm_q4_k / gemm_q5_k): one token by the maddubs row-pair /
  // 4-row kernels of kquant/q45_K_gemm_rowdot.h, which on the Zen 5 VM beat a vpdpbusd 8-row kernel.
  if constexpr (!std::is_same_v<Fmt, kq::FmtQ5K>)
    if (n_tok >= kMinTokens && gemm_tokens<Fmt>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride)) return;
  row_kernel(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

}  // namespace

void gemm_q4_k_vnni(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, float* out,
                    size_t os) {
  gemm_vnni<kq::FmtQ4K>(gemm_q4_k, k, w, ws, nr, a, as, nt, out, os);
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
  gemm_vnni<kq::FmtQ5K>(gemm_q5_k, k, w, ws, nr, a, as, nt, out, os);
}

}  // namespace baton::kernels::avx512
