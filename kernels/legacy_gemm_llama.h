// The legacy-format gemm in llama.cpp's x86 order (tinyBLAS_Q0_AVX for batches and
// ggml_vec_dot_{q4_0,q5_0,q8_0}_q8_0 / {q4_1,q5_1}_q8_1 for single tokens, which do the same
// arithmetic). Definition (scalar reference: legacy_scalar.cpp): per block, lane i (0..7) is the
// exact integer sum of the products of elements 4i..4i+3; acc_i = fma(d_w * d_a, float(lane_i),
// acc_i) over the blocks in order; result = hsum8(acc) (+ summs = Σ m_w * s_a for Q4_1/Q5_1).
// Q4_0 follows llama.cpp's AVX2 repack kernels instead (kChain): acc = fma(float(block sum),
// d_w * d_a, acc), one scalar chain per output.
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
    float ad[T], as[T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const uint8_t* ab = a + t * a_stride + i * A::kBytes;
      aq[t] = load32(ab + A::kQs);
      ad[t] = half_to_float(ab);
      as[t] = F::kSigned ? 0.0f : half_to_float(ab + 2);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const uint8_t* wb = w + r * w_stride + i * kWB;
      if constexpr (T == 1) _mm_prefetch(reinterpret_cast<const char*>(wb + kPrefetchBytes), _MM_HINT_T0);
      const WBlock b = F::load(wb);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const __m256i s = F::kSigned ? _mm256_sign_epi8(aq[t], b.q) : aq[t];
        const __m256 d = _mm256_set1_ps(b.d * ad[t]);
        if constexpr (F::kChain) {
          chain[r][t] = std::fma(hsum_i32(lanes_i32<kVnni>(b.aq, s)), b.d * ad[t], chain[r][t]);
          continue;
        }
        acc[r][t] = _mm256_fmadd_ps(d, lanes<kVnni>(b.aq, s), acc[r][t]);
        if constexpr (!F::kSigned) summs[r][t] = summs[r][t] + b.m * as[t];
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

constexpr int kRows = 2;  // prefill tile: 2 rows x 4 tokens; decode: 1 row (one DRAM stream)
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
void gemm(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
          int64_t n_tok, float* out, size_t out_stride) {
  const int64_t nb = k / kQK;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  const int64_t row_step = n_tok == 1 ? 1 : kRows;
  for (int64_t r0 = 0; r0 < n_rows; r0 += row_step) {
    const int64_t nr = n_rows - r0 < row_step ? n_rows - r0 : row_step;
    for (int64_t t0 = 0; t0 < n_tok; t0 += kToks) {
      const int64_t nt = n_tok - t0 < kToks ? n_tok - t0 : kToks;
      const TileFn<F, kVnni> fn = nr == 1 ? pick_toks<F, kVnni, 1>(nt) : pick_toks<F, kVnni, kRows>(nt);
      fn(nb, wb + r0 * w_stride, w_stride, ab + t0 * a_stride, a_stride, out + t0 * out_stride + r0, out_stride);
    }
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
