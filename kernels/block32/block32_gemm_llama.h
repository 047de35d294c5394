// The legacy-format gemm in llama.cpp's x86 order (tinyBLAS_Q0_AVX for batches and
// ggml_vec_dot_{q4_0,q5_0,q8_0}_q8_0 / {q4_1,q5_1}_q8_1 for single tokens, which do the same
// arithmetic). Definition (scalar reference: block32/block32_ops_scalar.cpp): per block, lane i (0..7) is the
// exact integer sum of the products of elements 4i..4i+3; acc_i = fma(d_w * d_a, float(lane_i),
// acc_i) over the blocks in order; result = hsum8(acc) (+ summs = Σ m_w * s_a for Q4_1/Q5_1).
// Q4_0 follows llama.cpp's AVX2 repack kernels instead (kChain): acc = fma(float(block sum),
// d_w * d_a, acc), one scalar chain per output; computed 16 or 8 rows at a time with lane r of
// one vector holding row r's chain (block32/q4_0_gemm.h), tail rows (< 8) by the generic tile.
// Every (row, token) output runs the same float operations whatever tile it falls in, so the
// results are batch invariant and bitwise equal to the scalar reference on every ISA.
//
// Included by block32/block32_gemm_avx2.cpp (x86-64-v3; built a second time for the AVX-VNNI tier with
// kVnni = true), block32/block32_gemm_avx512.cpp (x86-64-v4) and block32/block32_gemm_avx512vnni.cpp (+VNNI,
// kVnni = true): dpbusd gives the same int32 lanes as maddubs + madd.
// Everything here has internal linkage, so each ISA's copy stays in its own translation unit.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/block32/blocks.h"
#include "kernels/block32/q4_0_gemm.h"
#include "kernels/block32/q8_0_gemm_batch.h"
#include "kernels/block32/block32_gemm_simd.h"
#include "kernels/core/scratch.h"
#ifdef __AVX512F__
#include "kernels/block32/block32_gemm_pairs.h"
#endif

namespace baton::kernels {
namespace {  // NOLINT: one copy per ISA translation unit (different -march), never shared

namespace llama_order {

// Formats. The weight value of element j is u_j - kOffset with u_j = unsigned_q()'s byte j
// (0..255, dpbusd's / maddubs' unsigned operand); kMin formats (Q4_1, Q5_1: activations in
// Q8_1) add m * s per block. Q8_0 also has signed_q() (the values themselves) for the sign
// form used where u * a could saturate maddubs' int16 pairs (255 * 127 * 2) or costs more.
struct Q4_0 {
  using Block = BlockQ4_0;
  static constexpr bool kMin = false;
  static constexpr bool kChain = true;  // llama.cpp's repack kernels: one float chain per output
  static constexpr int kOffset = 8;
  static __m256i unsigned_q(const uint8_t* p) { return denibble(p + 2); }
};
struct Q5_0 {
  using Block = BlockQ5_0;
  static constexpr bool kMin = false;
  static constexpr bool kChain = false;
  static constexpr int kOffset = 16;
  static __m256i unsigned_q(const uint8_t* p) { return _mm256_or_si256(denibble(p + 6), fifth_bits(p + 2)); }
};
struct Q8_0 {
  using Block = BlockQ8_0;
  static constexpr bool kMin = false;
  static constexpr bool kChain = false;
  static constexpr int kOffset = 128;
  static __m256i unsigned_q(const uint8_t* p) {
    return _mm256_xor_si256(load32(p + 2), _mm256_set1_epi8(static_cast<char>(0x80)));
  }
  static __m256i signed_q(const uint8_t* p) { return load32(p + 2); }
};
struct Q4_1 {
  using Block = BlockQ4_1;
  static constexpr bool kMin = true;
  static constexpr bool kChain = false;
  static constexpr int kOffset = 0;
  static __m256i unsigned_q(const uint8_t* p) { return denibble(p + 4); }
};
struct Q5_1 {
  using Block = BlockQ5_1;
  static constexpr bool kMin = true;
  static constexpr bool kChain = false;
  static constexpr int kOffset = 0;
  static __m256i unsigned_q(const uint8_t* p) { return _mm256_or_si256(denibble(p + 8), fifth_bits(p + 4)); }
};

// Activation block: Q8_0 (d, qs) for signed formats, Q8_1 (d, s, qs) for the others.
template <bool kMin>
struct Act {
  static constexpr size_t kBytes = kMin ? sizeof(BlockQ8_1) : sizeof(BlockQ8_0);
  static constexpr int kQs = kMin ? 4 : 2;
};

// Generic tile, R rows x T tokens, every (row, token) pair its own sequence of the contract:
// tinyBLAS lanes (acc_i = fma(d_w * d_a, lane_i, acc_i), hsum8) or, for kChain formats, the
// scalar chain (used by Q4_0 only for tail rows < 8). d_w * d_a: per lane the same float product
// as the scalar reference (scale_products for batches, two broadcasts for one token).
// The int32 lanes are exact: Σ u a - kOffset Σ a (bias, once per token and block, folded into
// dpbusd's accumulator with VNNI) or, in the sign form, Σ |q| sign(a, q). Q8_0 uses the sign
// form for decode, the offset form for AVX-512 VNNI batches (batches on 16 ymm registers:
// block32/q8_0_gemm_batch.h); both are exact for activation quants in -127..127, which is all
// quantize_q8_0 produces (sign(-128) wraps).
// No software prefetch: the hardware prefetchers follow the R row streams, and a T0 prefetch ahead
// measured slower (docs/BENCHMARKS.md, Kernel notes).
// The R * T products d_w * d_a of block i (dd[r * T + t]; R + T <= 8): the T + R f16 scales
// gathered by integer loads into one vector, converted by one vcvtph2ps, multiplied pairwise after
// two vpermps; the same float products as one scalar multiply each. Per block this costs ~5 vector
// instructions instead of 2 (R + T) conversions and R * T broadcasts and multiplies, which took
// ~40 % of the old AVX2 Q8_0 prefill tile's vector instructions (the fma then takes a broadcast load).
template <int R, int T>
inline void scale_products(const uint8_t* w_d, size_t w_stride, const uint8_t* a_d, size_t a_stride, float* dd) {
  static_assert(R + T <= 8);
  uint64_t half[2] = {0, 0};  // f16 lanes [a_0 .. a_{T-1}, w_0 .. w_{R-1}]
  for (int k = 0; k < T + R; ++k) {
    uint16_t h;
    __builtin_memcpy(&h, k < T ? a_d + k * a_stride : w_d + (k - T) * w_stride, 2);
    half[k / 4] |= uint64_t{h} << (16 * (k % 4));
  }
  const __m256 f = _mm256_cvtph_ps(_mm_set_epi64x(static_cast<long long>(half[1]), static_cast<long long>(half[0])));
  constexpr int kVecs = (R * T + 7) / 8;
  for (int v = 0; v < kVecs; ++v) {
    alignas(32) int32_t iw[8], ia[8];
    for (int j = 0; j < 8; ++j) {
      const int k = std::min(8 * v + j, R * T - 1);
      iw[j] = T + k / T;
      ia[j] = k % T;
    }
    const __m256 p =
        _mm256_mul_ps(_mm256_permutevar8x32_ps(f, _mm256_load_si256(reinterpret_cast<const __m256i*>(iw))),
                      _mm256_permutevar8x32_ps(f, _mm256_load_si256(reinterpret_cast<const __m256i*>(ia))));
    if (8 * v + 8 <= R * T) {
      _mm256_storeu_ps(dd + 8 * v, p);
    } else {
      alignas(32) float rest[8];
      _mm256_store_ps(rest, p);
      for (int j = 0; j < R * T - 8 * v; ++j) dd[8 * v + j] = rest[j];
    }
  }
}

#ifdef __AVX512F__
constexpr bool kWideRegs = true;  // 32 vector registers
#else
constexpr bool kWideRegs = false;
#endif

template <class F, bool kVnni, int R, int T>
void tile(int64_t nb, const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride, float* out,
          size_t out_stride) {
  using A = Act<F::kMin>;
  constexpr size_t kWB = sizeof(typename F::Block);
  // The offset form's per-token bias vectors do not fit the 16 ymm registers of a 2 x 4 tile (it
  // spilled): there Q8_0 batches take q8_0_batch_gemm (bias from scratch), decode the sign form here.
  constexpr bool kSign = F::kOffset == 128 && (!kVnni || T == 1 || !kWideRegs);
  constexpr bool kBias = F::kOffset != 0 && !kSign;
  __m256 acc[R][T];
  float summs[R][T];
  float chain[R][T];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      acc[r][t] = _mm256_setzero_ps();
      summs[r][t] = 0.0f;
      chain[r][t] = 0.0f;
    }
  // Batches take the scale products from scale_products; one-token tiles (decode, memory bound)
  // keep two broadcasts and a multiply per output, which measured no slower there.
  constexpr bool kVecScales = !F::kChain && T > 1;
  alignas(32) float dd[R * T];
  for (int64_t i = 0; i < nb; ++i) {
    __m256i aq[T], bias[T];
    float ad[T], as[T];
    if constexpr (kVecScales) {
      scale_products<R, T>(w + i * kWB, w_stride, a + i * A::kBytes, a_stride, dd);
      // dd is read back by broadcast loads (load pipes); without this g++ forwards the stores
      // through register shuffles.
      asm volatile("" : : "r"(dd) : "memory");
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const uint8_t* ab = a + t * a_stride + i * A::kBytes;
      aq[t] = load32(ab + A::kQs);
      ad[t] = kVecScales ? 0.0f : half_to_float(ab);
      as[t] = F::kMin ? half_to_float(ab + 2) : 0.0f;
      if constexpr (kBias)
        bias[t] = _mm256_sub_epi32(_mm256_setzero_si256(),
                                   lanes_i32<kVnni>(_mm256_set1_epi8(static_cast<char>(F::kOffset)), aq[t]));
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const uint8_t* wb = w + r * w_stride + i * kWB;
      __m256i u, q;
      if constexpr (kSign) {
        q = F::signed_q(wb);
        u = _mm256_sign_epi8(q, q);
      } else {
        u = F::unsigned_q(wb);
      }
      const float d = kVecScales ? 0.0f : half_to_float(wb);
      const float m = F::kMin ? half_to_float(wb + 2) : 0.0f;
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        __m256i l;
        if constexpr (kSign) {
          l = lanes_i32<kVnni>(u, _mm256_sign_epi8(aq[t], q));
        } else if constexpr (kBias && kVnni) {
          l = _mm256_dpbusd_epi32(bias[t], u, aq[t]);
        } else if constexpr (kBias) {
          l = _mm256_add_epi32(lanes_i32<kVnni>(u, aq[t]), bias[t]);
        } else {
          l = lanes_i32<kVnni>(u, aq[t]);
        }
        if constexpr (F::kChain) {
          chain[r][t] = std::fma(hsum_i32(l), d * ad[t], chain[r][t]);
        } else {
          const __m256 dwa = kVecScales ? _mm256_broadcast_ss(dd + r * T + t)
                                        : _mm256_mul_ps(_mm256_set1_ps(d), _mm256_set1_ps(ad[t]));
          acc[r][t] = _mm256_fmadd_ps(dwa, _mm256_cvtepi32_ps(l), acc[r][t]);
          if constexpr (F::kMin) summs[r][t] = summs[r][t] + m * as[t];
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) out[t * out_stride + r] = F::kChain ? chain[r][t] : hsum8(acc[r][t]) + summs[r][t];
}

template <class F, bool kVnni>
using TileFn = void (*)(int64_t, const uint8_t*, size_t, const uint8_t*, size_t, float*, size_t);

// Prefill tiles: 2 rows x 4 tokens on AVX2 (16 ymm), 4 x 4 on AVX-512 (32 registers); with
// VNNI, Q8_0 / Q5_0 use 4 rows x 4 token pairs in zmm instead (block32/block32_gemm_pairs.h); decode:
// rows in pairs half a call apart (gemm below), the odd row and Q4_0's tail rows 1 row at a
// time (tiles of adjacent rows read side by side ran ~2x slower from DRAM). Q4_0: 8 rows x 2
// tokens (AVX2) or x 4 tokens (AVX-512).
#ifdef __AVX512F__
constexpr int kRows = 4;
#else
constexpr int kRows = 2;
#endif
constexpr int kDecodeRows = 1;
constexpr int kToks = 4;

template <class F, bool kVnni, int R>
TileFn<F, kVnni> pick_toks(int64_t t) {
  switch (t) {
    case 1: return tile<F, kVnni, R, 1>;
    case 2: return tile<F, kVnni, R, 2>;
    case 3: return tile<F, kVnni, R, 3>;
    default: return tile<F, kVnni, R, 4>;
  }
}

template <class F, bool kVnni>
TileFn<F, kVnni> pick(int64_t nr, int64_t nt) {
  if (nr == 1) return pick_toks<F, kVnni, 1>(nt);
  if (nt == 1) {
    if (nr == 4) return tile<F, kVnni, 4, 1>;
    if (nr == 2) return tile<F, kVnni, 2, 1>;
    return tile<F, kVnni, 1, 1>;
  }
  if (nr == kRows) return pick_toks<F, kVnni, kRows>(nt);
  if (nr >= 2) return pick_toks<F, kVnni, 2>(nt);
  return pick_toks<F, kVnni, 1>(nt);
}

#ifdef __AVX512F__
// Q8_0 decode, two rows per zmm (row A in the low 256 bits, row B in the high) against one
// token. Each row's lanes (sign form: |q| times a with q's sign; where q = 0 the product is 0
// either way) and float chain are exactly the 1 x 1 tile's, so the bits are too. The 1 x 1 tile
// is bound by its chain of nb dependent FMAs per row; one chain for two rows halves that time
// per row.
template <bool kVnni>
void q8_0_decode_row_pair(int64_t nb, const uint8_t* wa, const uint8_t* wb, const uint8_t* a, float* out_a,
                          float* out_b) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const size_t off = static_cast<size_t>(i) * sizeof(BlockQ8_0);
    const uint8_t* xa = wa + off;
    const uint8_t* xb = wb + off;
    const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(load32(xa + 2)), load32(xb + 2), 1);
    const __m512i aq = _mm512_broadcast_i64x4(load32(a + off + 2));
    const __m512i u = _mm512_abs_epi8(q);
    const __m512i sa = _mm512_mask_sub_epi8(aq, _mm512_movepi8_mask(q), _mm512_setzero_si512(), aq);
    __m512i l;
    if constexpr (kVnni) l = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, sa);
    else l = _mm512_madd_epi16(_mm512_set1_epi16(1), _mm512_maddubs_epi16(u, sa));
    const __m512 dw = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(half_to_float(xa))),
                                         _mm256_set1_ps(half_to_float(xb)), 1);
    acc = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(half_to_float(a + off))), _mm512_cvtepi32_ps(l), acc);
  }
  *out_a = hsum8(_mm512_castps512_ps256(acc));
  *out_b = hsum8(_mm512_extractf32x8_ps(acc, 1));
}
#endif

// Decode of rows [0, 2 * (n_rows / 2)): row r pairs with row r + n_rows / 2, two independent
// chains (the 1 x 1 tile is bound by its chain of nb dependent FMAs per row). Read side by side,
// adjacent rows halved the DRAM rate; rows half a call apart did not. Returns the rows done.
template <class F, bool kVnni>
int64_t decode_row_pairs(int64_t nb, const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* a,
                         size_t a_stride, float* out) {
  const int64_t half = n_rows / 2;
  const size_t apart = static_cast<size_t>(half) * w_stride;
  for (int64_t r = 0; r < half; ++r) {
    const uint8_t* w_r = w + static_cast<size_t>(r) * w_stride;
#ifdef __AVX512F__
    if constexpr (std::is_same_v<F, Q8_0>) {
      q8_0_decode_row_pair<kVnni>(nb, w_r, w_r + apart, a, out + r, out + r + half);
      continue;
    }
#endif
    float res[2];
    tile<F, kVnni, 2, 1>(nb, w_r, apart, a, a_stride, res, 1);
    out[r] = res[0];
    out[r + half] = res[1];
  }
  return 2 * half;
}

// Q8_0 batches on 16 ymm registers take their own tile (block32/q8_0_gemm_batch.h).
template <class F>
inline constexpr bool kQ8Batch = !kWideRegs && std::is_same_v<F, Q8_0>;

template <class F, bool kVnni>
void gemm(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
          float* out, size_t out_stride) {
  const int64_t nb = k / kQK;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  int64_t r0 = 0;
  if constexpr (F::kChain)  // Q4_0: groups of 16 / 8 rows, tail rows below by the generic tile
    r0 = q4_0_gemm_groups<kVnni>(nb, wb, w_stride, n_rows, ab, a_stride, n_tok, out, out_stride);
  else if (n_tok == 1)  // decode: rows in far-apart pairs, an odd last row below
    r0 = decode_row_pairs<F, kVnni>(nb, wb, w_stride, n_rows, ab, a_stride, out);
  if constexpr (kQ8Batch<F>) {
    if (n_tok > 1) return q8_0_batch_gemm<kVnni>(nb, wb, w_stride, n_rows, ab, a_stride, n_tok, out, out_stride);
  }
  const int64_t row_step = n_tok == 1 ? kDecodeRows : kRows;
  int64_t n_pairs = 0;  // tokens [0, 2 n_pairs) by the zmm pair tiles (AVX-512 + VNNI)
#ifdef __AVX512F__
  [[maybe_unused]] PairActs pairs{};
  if constexpr (kVnni && kPairForm<F>) {
    n_pairs = n_tok / 2;
    if (n_pairs > 0) pairs = pack_pairs(nb, ab, a_stride, n_pairs);
  }
#endif
  while (r0 < n_rows) {
    const int64_t left = n_rows - r0 < row_step ? n_rows - r0 : row_step;
    const int64_t nr = left >= 4 ? 4 : left >= 2 ? 2 : 1;
#ifdef __AVX512F__
    if constexpr (kVnni && kPairForm<F>) {
      for (int64_t p0 = 0; p0 < n_pairs; p0 += kPairs) {
        const int64_t np = n_pairs - p0 < kPairs ? n_pairs - p0 : kPairs;
        const size_t j = static_cast<size_t>(p0 * nb);
        pick_pairs<F>(nr, np)(nb, wb + r0 * w_stride, w_stride, pairs.qs + 64 * j, pairs.d + 2 * j,
                              out + 2 * p0 * out_stride + r0, out_stride);
      }
    }
#endif
    for (int64_t t0 = 2 * n_pairs; t0 < n_tok; t0 += kToks) {
      const int64_t nt = n_tok - t0 < kToks ? n_tok - t0 : kToks;
      pick<F, kVnni>(nr, nt)(nb, wb + r0 * w_stride, w_stride, ab + t0 * a_stride, a_stride, out + t0 * out_stride + r0,
                             out_stride);
    }
    r0 += nr;
  }
}

}  // namespace llama_order

}  // namespace
}  // namespace baton::kernels

// Defines the five entry points gemm_q4_0 ... gemm_q8_0 (suffix SUFFIX) in the current
// namespace with the given VNNI choice.
#define BATON_LEGACY_LLAMA_GEMMS(SUFFIX, VNNI)                                                                  \
  void gemm_q4_0##SUFFIX(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, \
                         float* out, size_t os) {                                                               \
    llama_order::gemm<llama_order::Q4_0, VNNI>(k, w, ws, nr, a, as, nt, out, os);                               \
  }                                                                                                             \
  void gemm_q4_1##SUFFIX(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, \
                         float* out, size_t os) {                                                               \
    llama_order::gemm<llama_order::Q4_1, VNNI>(k, w, ws, nr, a, as, nt, out, os);                               \
  }                                                                                                             \
  void gemm_q5_0##SUFFIX(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, \
                         float* out, size_t os) {                                                               \
    llama_order::gemm<llama_order::Q5_0, VNNI>(k, w, ws, nr, a, as, nt, out, os);                               \
  }                                                                                                             \
  void gemm_q5_1##SUFFIX(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, \
                         float* out, size_t os) {                                                               \
    llama_order::gemm<llama_order::Q5_1, VNNI>(k, w, ws, nr, a, as, nt, out, os);                               \
  }                                                                                                             \
  void gemm_q8_0##SUFFIX(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, \
                         float* out, size_t os) {                                                               \
    llama_order::gemm<llama_order::Q8_0, VNNI>(k, w, ws, nr, a, as, nt, out, os);                               \
  }
