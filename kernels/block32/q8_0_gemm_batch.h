// Q8_0 prompt batches on 16 ymm registers (the AVX2 and AVX-VNNI tiers): 2 rows x 4 tokens per
// tile, in llama.cpp's order (block32_gemm_llama.h's definition), bitwise its generic tile.
// The float side is what bounds this tile (with its integer part removed the AVX-VNNI tile ran no
// faster), so it is made small: per row and block one vmulps gives d_w times the tile's 4 d_a in
// both 128-bit halves, and vpermilps then broadcasts each product in-lane (the same float
// products as scale_products'; its stored vector read back by broadcast loads measured ~25 %
// slower); both rows' f16 d are converted once for all token tiles and the tokens' d once per
// matmul (vcvtph2ps per block cost ~12 %). The int32 lanes, per (row, token, block):
// - AVX-VNNI, the offset form: one vpdpbusd(bias, q + 128, a) with bias = -128 Σ a per lane,
//   prepared once per matmul beside the activation's quants;
// - AVX2, the sign form: vpmaddubsw(|q|, sign(a, q)) + vpmaddwd (maddubs cannot take q + 128: its
//   int16 pair sums would saturate).
// Both are Σ q a exactly for activation quants in -127..127 (all quantize_q8_0 produces).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/block32/block32_gemm_simd.h"
#include "kernels/block32/blocks.h"
#include "kernels/core/scratch.h"

namespace baton::kernels {
namespace {  // NOLINT: one copy per ISA translation unit (different -march), never shared
namespace llama_order {

constexpr int kQ8BatchToks = 4;

// One activation block of a Q8_0 batch in the offset form.
struct Q8OffsetAct {
  __m256i bias;  // -128 Σ a over each lane's 4 quants
  __m256i qs;    // the 32 quants
};

// One activation block of a Q8_0 batch in the sign form.
struct Q8SignAct {
  __m256i qs;
};

// Element t of each 128-bit half, everywhere. vpermilps takes an immediate, which only a literal
// guarantees (an -O0 build does not fold t * 0x55), hence the switch; optimized builds fold it.
inline __m256 lane_broadcast(__m256 v, int t) {
  switch (t) {
    case 0: return _mm256_permute_ps(v, 0x00);
    case 1: return _mm256_permute_ps(v, 0x55);
    case 2: return _mm256_permute_ps(v, 0xAA);
    default: return _mm256_permute_ps(v, 0xFF);
  }
}

// A tile's activation block: the offset form's quants beside their bias, or (sign form) the
// quants alone; both prepared once per matmul (Q8BatchPreparer), token t's block i at [t nb + i].
// Tiles take them by a typed pointer: a struct of pointers by value ran 4-5 % slower.
template <bool kOffset>
using Q8BatchAct = std::conditional_t<kOffset, Q8OffsetAct, Q8SignAct>;

// act_d4: the d of tokens t0..t0+3 of block i at act_d4[4 i + t] (a tile's 4 tokens side by side);
// w_d: the R rows' d, block i's at w_d[R i + r].
template <bool kOffset, int R, int T>
void q8_0_batch_tile(int64_t nb, const uint8_t* w, size_t w_stride, const float* w_d, const Q8BatchAct<kOffset>* act,
                     const float* act_d4, float* out, size_t out_stride) {
  static_assert(T <= kQ8BatchToks);
  constexpr size_t kWB = sizeof(BlockQ8_0);
  __m256 acc[R][T];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    // dd[r] = d_w(r) * [d_a(t0) .. d_a(t0 + 3)] in both halves.
    const __m256 da = _mm256_broadcast_ps(reinterpret_cast<const __m128*>(act_d4 + 4 * i));
    __m256i q[R];  // offset form: q + 128; sign form: q
    __m256 dd[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256i wq = load32(w + r * w_stride + i * kWB + 2);
      q[r] = kOffset ? _mm256_xor_si256(wq, _mm256_set1_epi8(static_cast<char>(0x80))) : wq;
      dd[r] = _mm256_mul_ps(_mm256_broadcast_ss(w_d + R * i + r), da);
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      if constexpr (kOffset) {
        __m256i aq = act[t * nb + i].qs;
        __m256i b = act[t * nb + i].bias;
        // In registers: as memory operands g++ loads both once per row.
        asm("" : "+x"(aq), "+x"(b));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m256i l = _mm256_dpbusd_epi32(b, q[r], aq);
          acc[r][t] = _mm256_fmadd_ps(lane_broadcast(dd[r], t), _mm256_cvtepi32_ps(l), acc[r][t]);
        }
      } else {
        const __m256i aq = act[t * nb + i].qs;
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m256i l = lanes_i32<false>(_mm256_sign_epi8(q[r], q[r]), _mm256_sign_epi8(aq, q[r]));
          acc[r][t] = _mm256_fmadd_ps(lane_broadcast(dd[r], t), _mm256_cvtepi32_ps(l), acc[r][t]);
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) out[t * out_stride + r] = hsum8(acc[r][t]);
}

template <bool kOffset>
using Q8BatchTileFn = void (*)(int64_t, const uint8_t*, size_t, const float*, const Q8BatchAct<kOffset>*, const float*,
                               float*, size_t);
template <bool kOffset, int R>
Q8BatchTileFn<kOffset> q8_0_batch_pick(int64_t nt) {
  switch (nt) {
    case 1: return q8_0_batch_tile<kOffset, R, 1>;
    case 2: return q8_0_batch_tile<kOffset, R, 2>;
    case 3: return q8_0_batch_tile<kOffset, R, 3>;
    default: return q8_0_batch_tile<kOffset, R, 4>;
  }
}

// A batch's activations in the tiles' layout, prepared once per matmul and thread
// (detail::PreparedActivations): the driver calls the gemm once per row chunk, and once per
// weight of a q/k/v or gate/up group, with the same activations.
template <bool kOffset>
class Q8BatchPreparer {
 public:
  // act: token t's block i at [t nb + i]; act_d: the d of token t, block i at
  // [(t / 4) 4 nb + 4 i + t % 4] (each tile's 4 side by side; a last partial tile's padded).
  void prepare(const uint8_t* a, size_t a_stride, int64_t n_tok, int64_t nb) {
    if (prepared_.same_as_last(a, a_stride, n_tok, nb)) return;
    constexpr int64_t kT = kQ8BatchToks;
    act_.resize(static_cast<size_t>(n_tok * nb));
    act_d_.resize(static_cast<size_t>((n_tok + kT - 1) / kT * kT * nb));
    for (int64_t t = 0; t < n_tok; ++t)
      for (int64_t i = 0; i < nb; ++i) {
        const uint8_t* ab = a + t * a_stride + i * sizeof(BlockQ8_0);
        const __m256i aq = load32(ab + 2);
        act_[t * nb + i].qs = aq;
        if constexpr (kOffset)
          act_[t * nb + i].bias = _mm256_sub_epi32(
              _mm256_setzero_si256(),
              _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(static_cast<char>(0x80)), aq));
        act_d_[(t / kT) * kT * nb + kT * i + t % kT] = half_to_float(ab);
      }
  }
  const Q8BatchAct<kOffset>* act() const { return act_.data(); }
  const float* act_d() const { return act_d_.data(); }

 private:
  detail::PreparedActivations prepared_;
  std::vector<Q8BatchAct<kOffset>> act_;  // 32-byte aligned: the type's alignment
  std::vector<float> act_d_;
};

// All rows x tokens of a Q8_0 batch (nb blocks a row); tails by the smaller tiles. kOffset: the
// AVX-VNNI form (only built where dpbusd on ymm exists).
template <bool kOffset>
void q8_0_batch_gemm(int64_t nb, const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* a, size_t a_stride,
                     int64_t n_tok, float* out, size_t out_stride) {
  constexpr int64_t kT = kQ8BatchToks;
  thread_local Q8BatchPreparer<kOffset> preparer;
  preparer.prepare(a, a_stride, n_tok, nb);
  const Q8BatchAct<kOffset>* act = preparer.act();
  const float* act_d = preparer.act_d();
  auto* w_d =
      static_cast<float*>(detail::thread_scratch(2 * static_cast<size_t>(nb) * sizeof(float)));  // a row pair's d
  for (int64_t r0 = 0; r0 < n_rows;) {
    const int64_t nr = n_rows - r0 >= 2 ? 2 : 1;
    for (int64_t i = 0; i < nb; ++i)
      for (int64_t r = 0; r < nr; ++r) w_d[nr * i + r] = half_to_float(w + (r0 + r) * w_stride + i * sizeof(BlockQ8_0));
    for (int64_t t0 = 0; t0 < n_tok; t0 += kT) {  // t0 % 4 == 0: the tile's d are act_d + t0 nb on
      const int64_t nt = n_tok - t0 < kT ? n_tok - t0 : kT;
      (nr == 2 ? q8_0_batch_pick<kOffset, 2>(nt) : q8_0_batch_pick<kOffset, 1>(nt))(
          nb, w + r0 * w_stride, w_stride, w_d, act + t0 * nb, act_d + t0 * nb, out + t0 * out_stride + r0, out_stride);
    }
    r0 += nr;
  }
}

}  // namespace llama_order
}  // namespace
}  // namespace baton::kernels
