// The 256-bit row-parallel K-quant gemm: tiles of R rows x T tokens (R * T = 8 lanes); each
// super-block of a row is unpacked once per tile (kquant/qx_K_unpack.h) and reused for T tokens;
// every (row, token) integer sum is exact (vpmaddubsw products of at most 2 * 63 * 127, then
// vpmaddwd by the scale) and reduced to one lane per super-block, and the float steps run
// lane-wise in the Q4_K / Q5_K orders of kquant/kernels.h (Q2_K/Q3_K/Q6_K: kquant/qx_K_gemm_lanes.h). Included by the
// AVX2 and the AVX-512 kernel files (Zen 4 runs 512-bit integer ops at half rate, so the 256-bit kernel is the faster
// one there for decode); internal linkage keeps each copy its own.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/kquant/blocks.h"
#include "kernels/kquant/qx_K_unpack.h"
#include "kernels/core/simd256_tier.h"

namespace baton::kernels::kq {
namespace {

// Lane i of the result = sum of the 8 lanes of v[i], for 8 vectors.
inline __m256i reduce8(const __m256i v[8]) {
  const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]), h23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]), h67 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i a = _mm256_hadd_epi32(h01, h23), b = _mm256_hadd_epi32(h45, h67);
  // a = [v0..v3 low-half sums | v0..v3 high-half sums], b likewise for v4..v7.
  return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
}

// out[p] lane i = lanes 2p and 2p + 1 of v[i] added, for 8 vectors: the per-64-element sums of
// 8 outputs, lane i = output i, with 16 vector ops instead of 32 scalar adds (and their stores).
inline void pair_sums_by_output(const __m256i v[8], __m256i out[4]) {
  __m256i s[4];
  for (int j = 0; j < 4; ++j)  // [v2j p0, v2j+1 p0, v2j p1, v2j+1 p1 | the same for p2, p3]
    s[j] = _mm256_shuffle_epi32(_mm256_hadd_epi32(v[2 * j], v[2 * j + 1]), _MM_SHUFFLE(3, 1, 2, 0));
  const __m256i lo03 = _mm256_unpacklo_epi64(s[0], s[1]), hi03 = _mm256_unpackhi_epi64(s[0], s[1]);
  const __m256i lo47 = _mm256_unpacklo_epi64(s[2], s[3]), hi47 = _mm256_unpackhi_epi64(s[2], s[3]);
  out[0] = _mm256_permute2x128_si256(lo03, lo47, 0x20);
  out[1] = _mm256_permute2x128_si256(hi03, hi47, 0x20);
  out[2] = _mm256_permute2x128_si256(lo03, lo47, 0x31);
  out[3] = _mm256_permute2x128_si256(hi03, hi47, 0x31);
}

// The int16 scale of each vpmaddubsw pair of 32-element chunk c: sc[2c] for the low 16 bytes,
// sc[2c + 1] for the high 16.
inline __m256i chunk_scales256(const Unpacked& u, int c) {
  int32_t pair;
  std::memcpy(&pair, u.sc + 2 * c, 4);
  const __m256i spread = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,  //
                                          2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
  return _mm256_shuffle_epi8(_mm256_set1_epi32(pair), spread);
}

inline __m256i load_bsums256(const uint8_t* a_block) { return load32(a_block + offsetof(BlockQ8K, bsums)); }
inline __m256i load_corr256(const Unpacked& u) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(u.corr)); }

inline float a_scale256(const uint8_t* a_block) {
  float d;
  std::memcpy(&d, a_block + offsetof(BlockQ8K, d), 4);
  return d;
}

// The tile walks R rows side by side, a pattern the hardware prefetchers do not follow (a
// decode matvec from DRAM ran at a sixth of the read bandwidth): while it works on super-block
// b it prefetches super-block b of the next tile's rows into L2.
// One tile: rows w[0..R), tokens a[0..T) (pointers may repeat to pad a partial tile);
// result lane r * T + t goes to res[r * T + t]. Rows are w_stride bytes apart; the next tile's
// rows start R rows further.
// The float order of a tile's results (see kquant/kernels.h):
//   kSplit:    Q4_K as llama.cpp's repacked GEMV: two chains (d * sumi, dmin * summ) with one
//              step per super-block each, subtracted at the end;
//   kGrouped:  Q4_K as llama.cpp's repacked 4-row GEMM: the same two chains, one step per 64
//              elements;
//   kLanes:    Q5_K as llama.cpp's vec_dot_q5_K_q8_K: 8 float lanes per output (lane L sums the
//              products at positions 4L..4L+3 of every 32-element chunk), one step per
//              super-block, plus a dmin * summ chain; ggml's hsum_float_8 of the lanes + that.
enum class Order { kSplit, kGrouped, kLanes };

// ggml's hsum_float_8 of 8 floats.
inline float hsum8_ggml(const float* x) {
  const float s0 = x[4] + x[0], s1 = x[5] + x[1], s2 = x[6] + x[2], s3 = x[7] + x[3];
  return (s0 + s2) + (s1 + s3);
}

template <class Fmt, int R, int T, Order O>
void gemm_tile256(int64_t nb, const uint8_t* const* w, size_t w_stride, const uint8_t* const* a, float* res) {
  static_assert(R * T == 8);
  static_assert(Fmt::kKind == Kind::kMins);
  Unpacked u[R];
  __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
  __m256 lanes[O == Order::kLanes ? 8 : 1];
  for (auto& l : lanes) l = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    for (int r = 0; r < R; ++r) {
      // Integer arithmetic: the address may lie past the end of the weights (prefetches never fault).
      const uintptr_t p = reinterpret_cast<uintptr_t>(w[r]) + R * w_stride + static_cast<size_t>(b) * Fmt::kBytes;
      for (size_t line = 0; line < Fmt::kBytes + 63; line += 64)
        _mm_prefetch(reinterpret_cast<const char*>(p + line), _MM_HINT_T1);
    }
    for (int r = 0; r < R; ++r) Fmt::unpack(w[r] + b * static_cast<int64_t>(Fmt::kBytes), u[r]);
    const uint8_t* ab[T];
    for (int t = 0; t < T; ++t) ab[t] = a[t] + b * static_cast<int64_t>(sizeof(BlockQ8K));
    __m256i corr[R * T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) corr[r * T + t] = _mm256_madd_epi16(load_corr256(u[r]), load_bsums256(ab[t]));
    alignas(32) float dw[8], da[8], dm[8];
    for (int r = 0; r < R; ++r) {
      for (int t = 0; t < T; ++t) {
        dw[r * T + t] = u[r].d;
        dm[r * T + t] = u[r].dmin;
        da[r * T + t] = a_scale256(ab[t]);
      }
    }
    const __m256 vda = _mm256_load_ps(da);
    // The integer sums over chunks [c0, c1): lane L of sum[r * T + t] = sum over the chunks of
    // scale * (products at positions 4L..4L+3 of the chunk).
    auto chunk_sums = [&](int c0, int c1, __m256i* sum) {
      for (int i = 0; i < R * T; ++i) sum[i] = _mm256_setzero_si256();
      for (int c = c0; c < c1; ++c) {
        for (int r = 0; r < R; ++r) {
          const __m256i wq = _mm256_load_si256(reinterpret_cast<const __m256i*>(u[r].q + 32 * c));
          const __m256i sc = chunk_scales256(u[r], c);
          for (int t = 0; t < T; ++t) {
            const __m256i aq = load32(ab[t] + offsetof(BlockQ8K, qs) + 32 * c);
            sum[r * T + t] = dot256::dpwssd(sum[r * T + t], _mm256_maddubs_epi16(wq, aq), sc);
          }
        }
      }
    };
    __m256i sum[R * T];
    if constexpr (O == Order::kGrouped) {
      // Per 64 elements: sumi over chunks 2p, 2p + 1 and summ over corr lanes 2p, 2p + 1.
      __m256i mp[4];
      pair_sums_by_output(corr, mp);
      const __m256 dd = _mm256_mul_ps(_mm256_load_ps(dw), vda), dmm = _mm256_mul_ps(_mm256_load_ps(dm), vda);
      for (int p = 0; p < 4; ++p) {
        chunk_sums(2 * p, 2 * p + 2, sum);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(reduce8(sum)), dd, acc);
        accm = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mp[p]), dmm, accm);
      }
      continue;
    }
    chunk_sums(0, 8, sum);
    if constexpr (O == Order::kSplit) {
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(reduce8(sum)), _mm256_mul_ps(_mm256_load_ps(dw), vda), acc);
      accm = _mm256_fmadd_ps(_mm256_cvtepi32_ps(reduce8(corr)), _mm256_mul_ps(_mm256_load_ps(dm), vda), accm);
    } else {  // kLanes: d = a.d * f16(w.d), dmin = -a.d * f16(w.dmin)
      const __m256 d = _mm256_mul_ps(vda, _mm256_load_ps(dw));
      alignas(32) float dl[8];
      _mm256_store_ps(dl, d);
      for (int i = 0; i < R * T; ++i)
        lanes[i] = _mm256_fmadd_ps(_mm256_set1_ps(dl[i]), _mm256_cvtepi32_ps(sum[i]), lanes[i]);
      const __m256 dmin = _mm256_mul_ps(_mm256_xor_ps(vda, _mm256_set1_ps(-0.0f)), _mm256_load_ps(dm));
      accm = _mm256_fmadd_ps(dmin, _mm256_cvtepi32_ps(reduce8(corr)), accm);
    }
  }
  if constexpr (O == Order::kLanes) {
    alignas(32) float l[8], m[8];
    _mm256_store_ps(m, accm);
    for (int i = 0; i < R * T; ++i) {
      _mm256_store_ps(l, lanes[i]);
      res[i] = hsum8_ggml(l) + m[i];
    }
  } else {
    _mm256_storeu_ps(res, _mm256_sub_ps(acc, accm));
  }
}

template <class Fmt, int R, int T, Order O>
void gemm_tiles256(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                   int64_t n_tok, float* out, size_t out_stride) {
  const int64_t nb = k / kQK_K;
  const uint8_t* w8 = static_cast<const uint8_t*>(w);
  const uint8_t* a8 = static_cast<const uint8_t*>(a);
  for (int64_t r0 = 0; r0 < n_rows; r0 += R) {
    const int64_t nr = std::min<int64_t>(R, n_rows - r0);
    const uint8_t* wr[R];
    for (int r = 0; r < R; ++r) wr[r] = w8 + static_cast<size_t>(r0 + std::min<int64_t>(r, nr - 1)) * w_stride;
    for (int64_t t0 = 0; t0 < n_tok; t0 += T) {
      const int64_t nt = std::min<int64_t>(T, n_tok - t0);
      const uint8_t* at[T];
      for (int t = 0; t < T; ++t) at[t] = a8 + static_cast<size_t>(t0 + std::min<int64_t>(t, nt - 1)) * a_stride;
      float res[8];
      gemm_tile256<Fmt, R, T, O>(nb, wr, w_stride, at, res);
      for (int64_t t = 0; t < nt; ++t)
        for (int64_t r = 0; r < nr; ++r)
          out[static_cast<size_t>(t0 + t) * out_stride + static_cast<size_t>(r0 + r)] = res[r * T + t];
    }
  }
}

template <class Fmt, Order O>
void gemm_rows256(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                  int64_t n_tok, float* out, size_t out_stride) {
  // Wider token tiles unpack each weight super-block fewer times: 8 tokens per row from 8 on.
  if (n_tok == 1) gemm_tiles256<Fmt, 8, 1, O>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
  else if (n_tok == 2) gemm_tiles256<Fmt, 4, 2, O>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
  else if (n_tok < 8) gemm_tiles256<Fmt, 2, 4, O>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
  else gemm_tiles256<Fmt, 1, 8, O>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

}  // namespace
}  // namespace baton::kernels::kq
