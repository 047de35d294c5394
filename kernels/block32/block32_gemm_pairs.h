// AVX-512 + VNNI prefill tile of the offset-form legacy formats (Q8_0, Q5_0) in llama.cpp's
// tinyBLAS order (block32/block32_gemm_llama.h): two (row, token) outputs per zmm register, the low
// 256 bits token t and the high 256 bits token t + 1 of the same row. Each half runs exactly the
// 8-lane sequence of the ymm tile (lanes = dpbusd(-offset·Σa, u, a), acc = fma(d_w * d_a,
// float(lanes), acc) over the blocks in order, hsum8 per half), so results are bitwise those of
// the scalar reference, for any tile; the zmm form halves the instructions per output.
// Included by block32/block32_gemm_llama.h only when __AVX512F__ is defined; used only with VNNI
// (block32/block32_gemm_avx512vnni.cpp). F is one of block32/block32_gemm_llama.h's format structs.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/block32/blocks.h"
#include "kernels/block32/block32_gemm_simd.h"

namespace baton::kernels {
namespace {  // NOLINT: one copy per ISA translation unit (different -march), never shared
namespace llama_order {

// The formats this tile serves: an unsigned weight byte with an offset, no min, no chain.
template <class F>
constexpr bool kPairForm = !F::kMin && !F::kChain && F::kOffset != 0;

// The unsigned weight bytes of one block in both 256-bit halves.
template <class F>
inline __m512i unsigned_q_x2(const uint8_t* p) {
  if constexpr (F::kOffset == 128) {  // Q8_0: broadcast load, then the sign flip in zmm
    const __m512i q = _mm512_broadcast_i64x4(load32(p + 2));
    return _mm512_xor_si512(q, _mm512_set1_epi8(static_cast<char>(0x80)));
  } else {
    return _mm512_broadcast_i64x4(F::unsigned_q(p));
  }
}

// The activations of token pairs (2p, 2p + 1) repacked once per gemm call: for pair p and
// block i, qs[(p * nb + i) * 64 ...] = token 2p's 32 quants then token 2p + 1's, and
// d[(p * nb + i) * 2 ...] = their scales as floats. Buffers are this thread's, reused.
struct PairActs {
  const uint8_t* qs;
  const float* d;
};

inline PairActs pack_pairs(int64_t nb, const uint8_t* a, size_t a_stride, int64_t n_pairs) {
  thread_local std::vector<uint8_t> qs;
  thread_local std::vector<float> d;
  const size_t n = static_cast<size_t>(n_pairs * nb);
  if (qs.size() < 64 * n) qs.resize(64 * n);
  if (d.size() < 2 * n) d.resize(2 * n);
  for (int64_t p = 0; p < n_pairs; ++p)
    for (int h = 0; h < 2; ++h) {
      const uint8_t* at = a + static_cast<size_t>(2 * p + h) * a_stride;
      for (int64_t i = 0; i < nb; ++i) {
        const size_t j = static_cast<size_t>(p * nb + i);
        const uint8_t* ab = at + i * sizeof(BlockQ8_0);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs.data() + 64 * j + 32 * h), load32(ab + 2));
        d[2 * j + h] = half_to_float(ab);
      }
    }
  return PairActs{qs.data(), d.data()};
}

// R rows x 2P tokens (P token pairs of pack_pairs, starting at qs / d of the first pair).
template <class F, int R, int P>
void tile_pairs(int64_t nb, const uint8_t* w, size_t w_stride, const uint8_t* qs, const float* d, float* out,
                size_t out_stride) {
  static_assert(kPairForm<F>);
  constexpr size_t kWB = sizeof(typename F::Block);
  const __m512i offset = _mm512_set1_epi8(static_cast<char>(F::kOffset));
  const __m512i halves = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  __m512 acc[R][P];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    __m512i aq[P], bias[P];
    __m512 adv[P];
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) {
      const size_t j = static_cast<size_t>(p * nb + i);
      aq[p] = _mm512_loadu_si512(qs + 64 * j);
      const __m128 d01 = _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(d + 2 * j)));
      adv[p] = _mm512_permutexvar_ps(halves, _mm512_castps128_ps512(d01));
      bias[p] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), offset, aq[p]));
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const uint8_t* wb = w + r * w_stride + i * kWB;
      const __m512i u = unsigned_q_x2<F>(wb);
      const __m512 dw = _mm512_set1_ps(half_to_float(wb));
#pragma GCC unroll 8
      for (int p = 0; p < P; ++p) {
        const __m512i l = _mm512_dpbusd_epi32(bias[p], u, aq[p]);
        acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(dw, adv[p]), _mm512_cvtepi32_ps(l), acc[r][p]);
      }
    }
  }
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      out[2 * p * out_stride + r] = hsum8(_mm512_castps512_ps256(acc[r][p]));
      out[(2 * p + 1) * out_stride + r] = hsum8(_mm512_extractf32x8_ps(acc[r][p], 1));
    }
}

template <class F>
using PairTileFn = void (*)(int64_t, const uint8_t*, size_t, const uint8_t*, const float*, float*, size_t);

constexpr int kPairRows = 4;  // rows of a prefill pair tile
constexpr int kPairs = 4;     // token pairs of a prefill pair tile (8 tokens)

template <class F, int R>
PairTileFn<F> pick_pairs_n(int64_t np) {
  switch (np) {
    case 1: return tile_pairs<F, R, 1>;
    case 2: return tile_pairs<F, R, 2>;
    case 3: return tile_pairs<F, R, 3>;
    default: return tile_pairs<F, R, 4>;
  }
}

// nr in {1, 2, 4}, np in 1..kPairs.
template <class F>
PairTileFn<F> pick_pairs(int64_t nr, int64_t np) {
  if (nr >= 4) return pick_pairs_n<F, 4>(np);
  if (nr == 2) return pick_pairs_n<F, 2>(np);
  return pick_pairs_n<F, 1>(np);
}

}  // namespace llama_order
}  // namespace
}  // namespace baton::kernels
