// The legacy-format gemm in llama.cpp's x86 order (tinyBLAS_Q0_AVX for batches and
// ggml_vec_dot_{q4_0,q5_0,q8_0}_q8_0 / {q4_1,q5_1}_q8_1 for single tokens, which do the same
// arithmetic). Definition (scalar reference: legacy_scalar.cpp): per block, lane i (0..7) is the
// exact integer sum of the products of elements 4i..4i+3; acc_i = fma(d_w * d_a, float(lane_i),
// acc_i) over the blocks in order; result = hsum8(acc) (+ summs = Σ m_w * s_a for Q4_1/Q5_1).
// Q4_0 follows llama.cpp's AVX2 repack kernels instead (kChain): acc = fma(float(block sum),
// d_w * d_a, acc), one scalar chain per output; computed 8 rows at a time with lane r of one
// vector holding row r's chain (q4_0_rows8), tail rows (< 8) by the generic tile.
// Every (row, token) output runs the same float operations whatever tile it falls in, so the
// results are batch invariant and bitwise equal to the scalar reference on every ISA.
//
// Included by legacy_gemm_avx2.cpp (x86-64-v3), legacy_gemm_avx512.cpp (x86-64-v4) and
// legacy_gemm_vnni_avx512.cpp (+VNNI, kVnni = true: dpbusd gives the same int32 lanes).
// Everything here has internal linkage, so each ISA's copy stays in its own translation unit.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/blocks_legacy.h"

namespace baton::kernels {
namespace {  // NOLINT: one copy per ISA translation unit (different -march), never shared

namespace llama_order {

inline float half_to_float(const uint8_t* p) {
  uint16_t h;
  __builtin_memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

inline __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// 16 bytes of nibbles -> 32 bytes: low nibbles (elements 0..15) then high nibbles (16..31).
inline __m256i denibble(const uint8_t* p) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_and_si256(_mm256_set1_epi8(15),
                          _mm256_inserti128_si256(_mm256_castsi128_si256(x), _mm_srli_epi16(x, 4), 1));
}

// bit j of qh -> byte j = 0x10 (set) or 0.
inline __m256i fifth_bits(const uint8_t* qh) {
  uint32_t bits;
  __builtin_memcpy(&bits, qh, 4);
  const __m256i shuffle = _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101,
                                             0x0202020202020202, 0x0303030303030303);
  const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), shuffle);
  const __m256i bit = _mm256_set1_epi64x(0x8040201008040201);
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit), _mm256_set1_epi8(16));
}

inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// One weight block unpacked: q = the 32 values (signed formats: with the offset applied;
// unsigned formats: 0..31), aq = |q| for signed formats.
struct WBlock {
  __m256i q, aq;
  float d, m;
};

// Formats: kSigned (weight value signed, activation Q8_0) or unsigned with a min (Q8_1).
struct Q4_0 {
  using Block = BlockQ4_0;
  static constexpr bool kSigned = true;
  static constexpr bool kChain = true;  // llama.cpp's repack kernels: one float chain per output
  static WBlock load(const uint8_t* p) {
    WBlock b;
    b.q = _mm256_sub_epi8(denibble(p + 2), _mm256_set1_epi8(8));
    b.aq = _mm256_sign_epi8(b.q, b.q);
    b.d = half_to_float(p);
    b.m = 0.0f;
    return b;
  }
};
struct Q5_0 {
  using Block = BlockQ5_0;
  static constexpr bool kSigned = true;
  static constexpr bool kChain = false;
  static WBlock load(const uint8_t* p) {
    WBlock b;
    b.q = _mm256_sub_epi8(_mm256_or_si256(denibble(p + 6), fifth_bits(p + 2)), _mm256_set1_epi8(16));
    b.aq = _mm256_sign_epi8(b.q, b.q);
    b.d = half_to_float(p);
    b.m = 0.0f;
    return b;
  }
};
struct Q8_0 {
  using Block = BlockQ8_0;
  static constexpr bool kSigned = true;
  static constexpr bool kChain = false;
  static WBlock load(const uint8_t* p) {
    WBlock b;
    b.q = load32(p + 2);
    b.aq = _mm256_sign_epi8(b.q, b.q);
    b.d = half_to_float(p);
    b.m = 0.0f;
    return b;
  }
};
struct Q4_1 {
  using Block = BlockQ4_1;
  static constexpr bool kSigned = false;
  static constexpr bool kChain = false;
  static WBlock load(const uint8_t* p) {
    WBlock b;
    b.q = denibble(p + 4);
    b.aq = b.q;
    b.d = half_to_float(p);
    b.m = half_to_float(p + 2);
    return b;
  }
};
struct Q5_1 {
  using Block = BlockQ5_1;
  static constexpr bool kSigned = false;
  static constexpr bool kChain = false;
  static WBlock load(const uint8_t* p) {
    WBlock b;
    b.q = _mm256_or_si256(denibble(p + 8), fifth_bits(p + 4));
    b.aq = b.q;
    b.d = half_to_float(p);
    b.m = half_to_float(p + 2);
    return b;
  }
};

// Activation block: Q8_0 (d, qs) for signed formats, Q8_1 (d, s, qs) for the others.
template <bool kSigned>
struct Act {
  static constexpr size_t kBytes = kSigned ? sizeof(BlockQ8_0) : sizeof(BlockQ8_1);
  static constexpr int kQs = kSigned ? 2 : 4;
};

// The 8 int32 lanes: exact sums of 4 products each.
template <bool kVnni>
inline __m256i lanes_i32(__m256i u, __m256i s) {
  if constexpr (kVnni) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
  } else {
    return _mm256_madd_epi16(_mm256_set1_epi16(1), _mm256_maddubs_epi16(u, s));
  }
}
template <bool kVnni>
inline __m256 lanes(__m256i u, __m256i s) { return _mm256_cvtepi32_ps(lanes_i32<kVnni>(u, s)); }

// The exact integer sum of the 8 lanes, as a float (|sum| < 2^24 for one block).
inline float hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
  return static_cast<float>(_mm_cvtsi128_si32(s));
}

constexpr int kPrefetchBytes = 256;

// Generic tile, R rows x T tokens, every (row, token) pair its own sequence of the contract:
// tinyBLAS lanes (acc_i = fma(d_w * d_a, lane_i, acc_i), hsum8) or, for kChain formats, the
// scalar chain (used by Q4_0 only for tail rows < 8). d_w * d_a is formed as a vector product
// of two broadcasts: per lane the same float product as the scalar reference.
template <class F, bool kVnni, int R, int T>
void tile(int64_t nb, const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride, float* out,
          size_t out_stride) {
  using A = Act<F::kSigned>;
  constexpr size_t kWB = sizeof(typename F::Block);
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
  for (int64_t i = 0; i < nb; ++i) {
    __m256i aq[T];
    __m256 adv[T];
    float ad[T], as[T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const uint8_t* ab = a + t * a_stride + i * A::kBytes;
      aq[t] = load32(ab + A::kQs);
      ad[t] = half_to_float(ab);
      adv[t] = _mm256_set1_ps(ad[t]);
      as[t] = F::kSigned ? 0.0f : half_to_float(ab + 2);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const uint8_t* wb = w + r * w_stride + i * kWB;
      if constexpr (T == 1) _mm_prefetch(reinterpret_cast<const char*>(wb + kPrefetchBytes), _MM_HINT_T0);
      const WBlock b = F::load(wb);
      const __m256 dw = _mm256_set1_ps(b.d);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const __m256i s = F::kSigned ? _mm256_sign_epi8(aq[t], b.q) : aq[t];
        if constexpr (F::kChain) {
          chain[r][t] = std::fma(hsum_i32(lanes_i32<kVnni>(b.aq, s)), b.d * ad[t], chain[r][t]);
        } else {
          acc[r][t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, adv[t]), lanes<kVnni>(b.aq, s), acc[r][t]);
          if constexpr (!F::kSigned) summs[r][t] = summs[r][t] + b.m * as[t];
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) out[t * out_stride + r] = F::kChain ? chain[r][t] : hsum8(acc[r][t]) + summs[r][t];
}

// ---- Q4_0 (kChain), 8 rows at once: lane r of one vector is row r's chain ----
// Per block the exact integer sum Σ (n_j - 8) a_j is formed as Σ n_j a_j - 8 Σ a_j (n = the raw
// nibble 0..15, so it is maddubs' unsigned operand directly; Σ a_j once per token, shared by
// the 8 rows). Two rows share one vector: [row x nibbles | row y nibbles], low nibbles against
// activations 0..15 and high nibbles against 16..31 (each 128-bit half broadcast), giving 4 int32
// partial sums per row. Rows are paired (r, r+4) so three hadds leave lane r = row r's block sum
// (integer sums: exact in any order). Then acc = fma(float(sum), d_w[r] * d_a, acc) per lane,
// the scalar reference's std::fma(float(sumi), d_w * d_a, acc).

inline __m256i load2x16(const uint8_t* x, const uint8_t* y) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x))),
                                 _mm_loadu_si128(reinterpret_cast<const __m128i*>(y)), 1);
}
inline __m256i bcast16(const uint8_t* p) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Σ of lo[j] * alo[j] + hi[j] * ahi[j] over each 8 bytes -> int32 (|each product| <= 15 * 128).
template <bool kVnni>
inline __m256i nibble_dot2(__m256i lo, __m256i hi, __m256i alo, __m256i ahi) {
  if constexpr (kVnni) {
    return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), lo, alo), hi, ahi);
  } else {
    return _mm256_madd_epi16(_mm256_set1_epi16(1),
                             _mm256_add_epi16(_mm256_maddubs_epi16(lo, alo), _mm256_maddubs_epi16(hi, ahi)));
  }
}

// 8 * Σ of the 32 activation quants, in every lane.
template <bool kVnni>
inline __m256i act_sum_x8(__m256i q) {
  __m256i l = lanes_i32<kVnni>(_mm256_set1_epi8(1), q);
  l = _mm256_add_epi32(l, _mm256_permute2x128_si256(l, l, 1));
  l = _mm256_add_epi32(l, _mm256_shuffle_epi32(l, 0x4E));
  l = _mm256_add_epi32(l, _mm256_shuffle_epi32(l, 0xB1));
  return _mm256_slli_epi32(l, 3);
}

// The f16 scales of block i of 8 rows, as floats (lane r = row r).
inline __m256 row_scales8(const uint8_t* wb, size_t w_stride) {
  alignas(16) uint16_t h[8];
#pragma GCC unroll 8
  for (int r = 0; r < 8; ++r) __builtin_memcpy(&h[r], wb + r * w_stride, 2);
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
}

constexpr int kQ4Prefetch = 256;  // (1024 measured no better)

template <bool kVnni, int T>
void q4_0_rows8(int64_t nb, const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride, float* out,
                size_t out_stride) {
  constexpr size_t kWB = sizeof(BlockQ4_0);
  constexpr size_t kAB = sizeof(BlockQ8_0);
  const __m256i m15 = _mm256_set1_epi8(15);
  __m256 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* wb = w + i * kWB;
    __m256i alo[T], ahi[T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const uint8_t* ab = a + t * a_stride + i * kAB;
      alo[t] = bcast16(ab + 2);
      ahi[t] = bcast16(ab + 18);
    }
    __m256i h[2][T];
#pragma GCC unroll 2
    for (int g = 0; g < 2; ++g) {
      __m256i p[2][T];
#pragma GCC unroll 2
      for (int j = 0; j < 2; ++j) {
        const uint8_t* wx = wb + (2 * g + j) * w_stride;  // rows 2g+j and 2g+j+4
        const uint8_t* wy = wx + 4 * w_stride;
        if constexpr (T == 1) {
          if ((i & 1) == 0) {
            _mm_prefetch(reinterpret_cast<const char*>(wx + kQ4Prefetch), _MM_HINT_T0);
            _mm_prefetch(reinterpret_cast<const char*>(wy + kQ4Prefetch), _MM_HINT_T0);
          }
        }
        const __m256i v = load2x16(wx + 2, wy + 2);
        const __m256i lo = _mm256_and_si256(v, m15);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m15);
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) p[j][t] = nibble_dot2<kVnni>(lo, hi, alo[t], ahi[t]);
      }
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) h[g][t] = _mm256_hadd_epi32(p[0][t], p[1][t]);
    }
    const __m256 dw = row_scales8(wb, w_stride);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const uint8_t* ab = a + t * a_stride + i * kAB;
      const __m256i sum = _mm256_sub_epi32(_mm256_hadd_epi32(h[0][t], h[1][t]), act_sum_x8<kVnni>(load32(ab + 2)));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dw, _mm256_set1_ps(half_to_float(ab))), acc[t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) _mm256_storeu_ps(out + t * out_stride, acc[t]);
}

template <class F, bool kVnni>
using TileFn = void (*)(int64_t, const uint8_t*, size_t, const uint8_t*, size_t, float*, size_t);

// Prefill tiles: 2 rows x 4 tokens on AVX2 (16 ymm), 4 x 4 on AVX-512 (32 registers); decode:
// 1 row (measured: 4-row decode tiles were ~1.7x slower for Q8_0). Q4_0: 8 rows x 2 tokens
// (AVX2) or x 4 tokens (AVX-512).
#ifdef __AVX512F__
constexpr int kRows = 4;
constexpr int kQ4Toks = 4;
#else
constexpr int kRows = 2;
constexpr int kQ4Toks = 2;
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

template <bool kVnni>
TileFn<Q4_0, kVnni> pick_q4_0(int64_t t) {
  switch (t) {
    case 1: return q4_0_rows8<kVnni, 1>;
    case 2: return q4_0_rows8<kVnni, 2>;
    case 3: return q4_0_rows8<kVnni, 3>;
    default: return q4_0_rows8<kVnni, kQ4Toks>;
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

template <class F, bool kVnni>
void gemm(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
          int64_t n_tok, float* out, size_t out_stride) {
  const int64_t nb = k / kQK;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  int64_t r0 = 0;
  if constexpr (F::kChain) {  // Q4_0: groups of 8 rows, tail rows below by the generic tile
    for (; r0 + 8 <= n_rows; r0 += 8) {
      for (int64_t t0 = 0; t0 < n_tok; t0 += kQ4Toks) {
        const int64_t nt = n_tok - t0 < kQ4Toks ? n_tok - t0 : kQ4Toks;
        pick_q4_0<kVnni>(nt)(nb, wb + r0 * w_stride, w_stride, ab + t0 * a_stride, a_stride,
                             out + t0 * out_stride + r0, out_stride);
      }
    }
  }
  const int64_t row_step = n_tok == 1 ? kDecodeRows : kRows;
  while (r0 < n_rows) {
    const int64_t left = n_rows - r0 < row_step ? n_rows - r0 : row_step;
    const int64_t nr = left >= 4 ? 4 : left >= 2 ? 2 : 1;
    for (int64_t t0 = 0; t0 < n_tok; t0 += kToks) {
      const int64_t nt = n_tok - t0 < kToks ? n_tok - t0 : kToks;
      pick<F, kVnni>(nr, nt)(nb, wb + r0 * w_stride, w_stride, ab + t0 * a_stride, a_stride,
                             out + t0 * out_stride + r0, out_stride);
    }
    r0 += nr;
  }
}

}  // namespace llama_order

}  // namespace
}  // namespace baton::kernels

// Defines the five entry points gemm_q4_0 ... gemm_q8_0 (suffix SUFFIX) in the current
// namespace with the given VNNI choice.
#define BATON_LEGACY_LLAMA_GEMMS(SUFFIX, VNNI)                                                             \
  void gemm_q4_0##SUFFIX(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as,        \
                         int64_t nt, float* out, size_t os) {                                               \
    llama_order::gemm<llama_order::Q4_0, VNNI>(k, w, ws, nr, a, as, nt, out, os);                           \
  }                                                                                                         \
  void gemm_q4_1##SUFFIX(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as,        \
                         int64_t nt, float* out, size_t os) {                                               \
    llama_order::gemm<llama_order::Q4_1, VNNI>(k, w, ws, nr, a, as, nt, out, os);                           \
  }                                                                                                         \
  void gemm_q5_0##SUFFIX(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as,        \
                         int64_t nt, float* out, size_t os) {                                               \
    llama_order::gemm<llama_order::Q5_0, VNNI>(k, w, ws, nr, a, as, nt, out, os);                           \
  }                                                                                                         \
  void gemm_q5_1##SUFFIX(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as,        \
                         int64_t nt, float* out, size_t os) {                                               \
    llama_order::gemm<llama_order::Q5_1, VNNI>(k, w, ws, nr, a, as, nt, out, os);                           \
  }                                                                                                         \
  void gemm_q8_0##SUFFIX(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as,        \
                         int64_t nt, float* out, size_t os) {                                               \
    llama_order::gemm<llama_order::Q8_0, VNNI>(k, w, ws, nr, a, as, nt, out, os);                           \
  }
