// Internal to legacy_gemm_avx512.cpp and legacy_gemm_vnni_avx512.cpp (do not include
// elsewhere: everything here has internal linkage and is compiled for AVX-512).
//
// Design. A "group" is 4 consecutive blocks (128 elements). For one row and one group, the
// weights are unpacked once into two zmm of unsigned bytes, lo = elements 0..15 of each block
// and hi = elements 16..31 (lane i of 128-bit lane j = element i (+16) of block j), plus the
// per-block scales broadcast over each block's four int32 lanes. The activations (Q8_0 or
// Q8_1 blocks) of every token are packed once per call into the same lo/hi layout with their
// scales and, for formats with a zero point z (Q4_0: 8, Q5_0: 16, Q8_0 stored as q+128), the
// correction -z * sum(a) per int32 lane. Then for each (row, token):
//     i   = corr + sum over 4 bytes of w_u8 * a_s8      (dpbusd, or maddubs+madd: same int32s)
//     acc = fma(float(i), d_w * d_a, acc)               (+ fma(m_w, s_a, acc) for Q4_1/Q5_1)
// and the 16 lanes are summed in a fixed order at the end. Each (row, token) pair sees this
// exact sequence whatever tile it is in, so results are batch invariant; the last, partial
// group is zero-padded (zero scales and quants add exact zeros). Tiles: 4 rows x 4 tokens for
// prefill, one row for decode (see kPrefetchBytes).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/blocks_legacy.h"
#include "kernels/kernel_scratch.h"

namespace baton::kernels::avx512 {
namespace {

constexpr int kGroup = 4;

// ---- word gathers: _mm512_permutex2var_epi16 over loads A = p + a_off and B = p + b_off ----

struct WordIdx {
  uint16_t v[32];
};

constexpr uint16_t pick_word(int gw, int a_off, int b_off) {
  if (gw >= a_off / 2 && gw < a_off / 2 + 32) return static_cast<uint16_t>(gw - a_off / 2);
  if (gw < b_off / 2 || gw >= b_off / 2 + 32) throw "word outside both loads";
  return static_cast<uint16_t>(32 + gw - b_off / 2);
}

// 16 bytes at byte `off` of each of the 4 blocks, in block order.
constexpr WordIdx quant_idx(int block_bytes, int off, int a_off, int b_off) {
  WordIdx x{};
  for (int w = 0; w < 32; ++w) x.v[w] = pick_word((block_bytes * (w / 8) + off) / 2 + w % 8, a_off, b_off);
  return x;
}

// The f16 at byte `off` of block j, repeated in words 4j..4j+3 (the low 16 words).
constexpr WordIdx scale_idx(int block_bytes, int off, int a_off, int b_off) {
  WordIdx x{};
  for (int w = 0; w < 16; ++w) x.v[w] = pick_word((block_bytes * (w / 4) + off) / 2, a_off, b_off);
  return x;
}

__m512i load_idx(const WordIdx& x) { return _mm512_loadu_si512(x.v); }
__m512i loadu(const uint8_t* p) { return _mm512_loadu_si512(p); }

__m512 scales(__m512i a, const WordIdx& idx, __m512i b) {
  return _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutex2var_epi16(a, load_idx(idx), b)));
}
// Like scales(), but only the first lane of each block kept (others 0): for the min term.
__m512 first_lane_scales(__m512i a, const WordIdx& idx, __m512i b) {
  return _mm512_cvtph_ps(
      _mm512_castsi512_si256(_mm512_maskz_permutex2var_epi16(0x1111, a, load_idx(idx), b)));
}

float hsum(__m512 v) {
  const __m256 s8 =
      _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_maskz_extractf32x8_ps(0xFF, v, 1));
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_add_ss(s4, _mm_movehdup_ps(s4));
  return _mm_cvtss_f32(s4);
}

// sum over each 4 bytes of u8 * s8, for lo and hi, added to init (exact int32 arithmetic).
template <bool kVnni>
__m512i dot_u8s8(__m512i init, __m512i w_lo, __m512i a_lo, __m512i w_hi, __m512i a_hi) {
  if constexpr (kVnni) {
    return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(init, w_lo, a_lo), w_hi, a_hi);
  } else {  // pairs stay below 2^15: u8 <= 31 here (Q8_0 weights use dot_sign instead)
    const __m512i p = _mm512_add_epi16(_mm512_maddubs_epi16(w_lo, a_lo), _mm512_maddubs_epi16(w_hi, a_hi));
    return _mm512_add_epi32(_mm512_madd_epi16(p, _mm512_set1_epi16(1)), init);
  }
}

// ---- packed activations ----

struct alignas(64) PackQ8_0 {
  __m512i lo, hi, corr;  // corr = -zero_point * sum(a) per int32 lane
  __m512 d;
};
struct alignas(64) PackQ8_1 {
  __m512i lo, hi;
  __m512 d, s;
};

template <int kZeroShift>  // zero point 1 << kZeroShift
void pack_group(const uint8_t* p, PackQ8_0& o) {
  constexpr int kB = static_cast<int>(sizeof(BlockQ8_0));
  static constexpr WordIdx kLo = quant_idx(kB, 2, 0, 64), kHi = quant_idx(kB, 18, 8, 72);
  static constexpr WordIdx kD = scale_idx(kB, 0, 0, 64);
  const __m512i a = loadu(p), c = loadu(p + 64), a2 = loadu(p + 8), d = loadu(p + 72);
  o.lo = _mm512_permutex2var_epi16(a, load_idx(kLo), c);
  o.hi = _mm512_permutex2var_epi16(a2, load_idx(kHi), d);
  o.d = scales(a, kD, c);
  const __m512i ones = _mm512_set1_epi8(1);
  const __m512i pairs = _mm512_add_epi16(_mm512_maddubs_epi16(ones, o.lo), _mm512_maddubs_epi16(ones, o.hi));
  const __m512i sum = _mm512_madd_epi16(pairs, _mm512_set1_epi16(1));
  o.corr = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, kZeroShift));
}

template <int>
void pack_group(const uint8_t* p, PackQ8_1& o) {
  constexpr int kB = static_cast<int>(sizeof(BlockQ8_1));
  static constexpr WordIdx kLo = quant_idx(kB, 4, 0, 64), kHi = quant_idx(kB, 20, 16, 80);
  static constexpr WordIdx kD = scale_idx(kB, 0, 0, 64), kS = scale_idx(kB, 2, 0, 64);
  const __m512i a = loadu(p), c = loadu(p + 64), a2 = loadu(p + 16), d = loadu(p + 80);
  o.lo = _mm512_permutex2var_epi16(a, load_idx(kLo), c);
  o.hi = _mm512_permutex2var_epi16(a2, load_idx(kHi), d);
  o.d = scales(a, kD, c);
  o.s = scales(a, kS, c);
}

// One token's row of nb activation blocks -> ceil(nb / 4) packed groups.
template <class Pack, class Block, int kZeroShift>
void pack_row(const uint8_t* a, int64_t nb, Pack* out) {
  constexpr int64_t kGroupBytes = kGroup * sizeof(Block);
  const int64_t full = nb / kGroup;
  for (int64_t g = 0; g < full; ++g) pack_group<kZeroShift>(a + g * kGroupBytes, out[g]);
  if (const int64_t rem = nb - full * kGroup) {
    alignas(64) uint8_t buf[kGroupBytes] = {};
    __builtin_memcpy(buf, a + full * kGroupBytes, rem * sizeof(Block));
    pack_group<kZeroShift>(buf, out[full]);
  }
}

// ---- weight formats: load one row group, multiply it with one packed token group ----

struct NibbleRow {
  __m512i lo, hi;  // unsigned quants
  __m512 d, m;     // m: min in the first lane of each block (Q4_1/Q5_1 only)
};

// Q4_0, Q4_1, Q5_0, Q5_1: offsets of d, m, qh (-1 = none) and qs inside a block.
template <class Block, int kD, int kM, int kQh, int kQs, int kZeroShift, class Act>
struct NibbleFormat {
  using Pack = std::conditional_t<std::is_same_v<Act, BlockQ8_0>, PackQ8_0, PackQ8_1>;
  using ActBlock = Act;
  static constexpr int kBlockBytes = sizeof(Block);
  static constexpr int kGroupBytes = kGroup * kBlockBytes;
  static constexpr int kShift = kZeroShift;

  static NibbleRow load(const uint8_t* p) {
    constexpr int kB = kGroupBytes - 64;  // second load ends at the group's end
    static constexpr WordIdx kQsIdx = quant_idx(kBlockBytes, kQs, 0, kB);
    static constexpr WordIdx kDIdx = scale_idx(kBlockBytes, kD, 0, kB);
    const __m512i a = loadu(p), b = loadu(p + kB);
    const __m512i raw = _mm512_permutex2var_epi16(a, load_idx(kQsIdx), b);
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    NibbleRow row;
    row.lo = _mm512_and_si512(raw, low4);
    row.hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
    if constexpr (kQh >= 0) {
      uint64_t lo_bits = 0, hi_bits = 0;
      for (int j = 0; j < kGroup; ++j) {
        uint32_t qh;
        __builtin_memcpy(&qh, p + j * kBlockBytes + kQh, 4);
        lo_bits |= static_cast<uint64_t>(qh & 0xFFFFu) << (16 * j);
        hi_bits |= static_cast<uint64_t>(qh >> 16) << (16 * j);
      }
      const __m512i bit4 = _mm512_set1_epi8(16);
      row.lo = _mm512_mask_add_epi8(row.lo, lo_bits, row.lo, bit4);
      row.hi = _mm512_mask_add_epi8(row.hi, hi_bits, row.hi, bit4);
    }
    row.d = scales(a, kDIdx, b);
    if constexpr (kM >= 0) {
      static constexpr WordIdx kMIdx = scale_idx(kBlockBytes, kM, 0, kB);
      row.m = first_lane_scales(a, kMIdx, b);
    } else {
      row.m = _mm512_setzero_ps();
    }
    return row;
  }

  template <bool kVnni>
  static __m512 dot(const NibbleRow& w, const PackQ8_0& a, __m512 acc) {
    const __m512i i = dot_u8s8<kVnni>(a.corr, w.lo, a.lo, w.hi, a.hi);
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(i), _mm512_mul_ps(w.d, a.d), acc);
  }
  template <bool kVnni>
  static __m512 dot(const NibbleRow& w, const PackQ8_1& a, __m512 acc) {
    const __m512i i = dot_u8s8<kVnni>(_mm512_setzero_si512(), w.lo, a.lo, w.hi, a.hi);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i), _mm512_mul_ps(w.d, a.d), acc);
    return _mm512_fmadd_ps(w.m, a.s, acc);
  }
};

using FormatQ4_0 = NibbleFormat<BlockQ4_0, 0, -1, -1, 2, 3, BlockQ8_0>;
using FormatQ4_1 = NibbleFormat<BlockQ4_1, 0, 2, -1, 4, 0, BlockQ8_1>;
using FormatQ5_0 = NibbleFormat<BlockQ5_0, 0, -1, 2, 6, 4, BlockQ8_0>;
using FormatQ5_1 = NibbleFormat<BlockQ5_1, 0, 2, 4, 8, 0, BlockQ8_1>;

// Q8_0 weights. With VNNI they are made unsigned (q + 128, zero point 128); without, the
// signs move onto the activations so that maddubs sees |q| <= 128 (no 16-bit overflow).
struct Q8Row {
  __m512i lo, hi;
  __mmask64 neg_lo, neg_hi;
  __m512 d;
};

struct FormatQ8_0 {
  using Pack = PackQ8_0;
  using ActBlock = BlockQ8_0;
  static constexpr int kBlockBytes = sizeof(BlockQ8_0);
  static constexpr int kGroupBytes = kGroup * kBlockBytes;
  static constexpr int kShift = 7;

  template <bool kVnni>
  static Q8Row load(const uint8_t* p) {
    static constexpr WordIdx kLo = quant_idx(kBlockBytes, 2, 0, 64), kHi = quant_idx(kBlockBytes, 18, 8, 72);
    static constexpr WordIdx kD = scale_idx(kBlockBytes, 0, 0, 64);
    const __m512i a = loadu(p), c = loadu(p + 64), a2 = loadu(p + 8), d = loadu(p + 72);
    const __m512i lo = _mm512_permutex2var_epi16(a, load_idx(kLo), c);
    const __m512i hi = _mm512_permutex2var_epi16(a2, load_idx(kHi), d);
    Q8Row row;
    if constexpr (kVnni) {
      const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
      row.lo = _mm512_xor_si512(lo, flip);
      row.hi = _mm512_xor_si512(hi, flip);
      row.neg_lo = row.neg_hi = 0;
    } else {
      row.lo = _mm512_abs_epi8(lo);
      row.hi = _mm512_abs_epi8(hi);
      row.neg_lo = _mm512_movepi8_mask(lo);
      row.neg_hi = _mm512_movepi8_mask(hi);
    }
    row.d = scales(a, kD, c);
    return row;
  }

  template <bool kVnni>
  static __m512 dot(const Q8Row& w, const PackQ8_0& a, __m512 acc) {
    __m512i i;
    if constexpr (kVnni) {
      i = dot_u8s8<true>(a.corr, w.lo, a.lo, w.hi, a.hi);
    } else {
      const __m512i zero = _mm512_setzero_si512(), ones = _mm512_set1_epi16(1);
      const __m512i a_lo = _mm512_mask_sub_epi8(a.lo, w.neg_lo, zero, a.lo);
      const __m512i a_hi = _mm512_mask_sub_epi8(a.hi, w.neg_hi, zero, a.hi);
      i = _mm512_add_epi32(_mm512_madd_epi16(_mm512_maddubs_epi16(w.lo, a_lo), ones),
                           _mm512_madd_epi16(_mm512_maddubs_epi16(w.hi, a_hi), ones));
    }
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(i), _mm512_mul_ps(w.d, a.d), acc);
  }
};

template <class F, bool kVnni>
auto load_row(const uint8_t* p) {
  if constexpr (std::is_same_v<F, FormatQ8_0>) return F::template load<kVnni>(p);
  else return F::load(p);
}

template <class F, bool kVnni>
auto load_row_partial(const uint8_t* p, int64_t n_blocks) {
  alignas(64) uint8_t buf[F::kGroupBytes] = {};
  __builtin_memcpy(buf, p, n_blocks * F::kBlockBytes);
  return load_row<F, kVnni>(buf);
}

// ---- tiles and the entry ----

// Decode streams each weight row once, and on the machines measured one sequential stream
// (a 1-row tile) reads DRAM much faster than several interleaved rows (17-20 vs 7-11 GB/s for
// Q4_0 4096x4096); a short software prefetch helps that stream a little more.
constexpr int kPrefetchBytes = 256;

// out[t][r] for an R x T tile over nb blocks; pack points at the tile's first token.
template <class F, bool kVnni, int R, int T>
void tile(int64_t nb, const uint8_t* w, size_t w_stride, const typename F::Pack* pack, int64_t ng,
          float* out, size_t out_stride) {
  __m512 acc[R][T];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();

  const int64_t full = nb / kGroup;
  for (int64_t g = 0; g < full; ++g) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = w + r * w_stride + g * F::kGroupBytes;
      if constexpr (T == 1) {
        _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchBytes), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchBytes + 64), _MM_HINT_T0);
      }
      const auto row = load_row<F, kVnni>(p);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) acc[r][t] = F::template dot<kVnni>(row, pack[t * ng + g], acc[r][t]);
    }
  }
  if (const int64_t rem = nb - full * kGroup) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const auto row = load_row_partial<F, kVnni>(w + r * w_stride + full * F::kGroupBytes, rem);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) acc[r][t] = F::template dot<kVnni>(row, pack[t * ng + full], acc[r][t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) out[t * out_stride + r] = hsum(acc[r][t]);
}

template <class F, bool kVnni>
using TileFn = void (*)(int64_t, const uint8_t*, size_t, const typename F::Pack*, int64_t, float*, size_t);

constexpr int kDecodeRows = 1;  // tile for n_tok == 1 (see kPrefetchBytes)
constexpr int kRows = 4;  // tile for n_tok > 1 (3x6, 4x5, 2x8, 3x8, 5x4 measured no faster)
constexpr int kToks = 4;

static_assert(kDecodeRows <= kRows);

template <class F, bool kVnni, int R>
TileFn<F, kVnni> pick_toks(int64_t t) {
  switch (t) {
    case 1: return tile<F, kVnni, R, 1>;
    case 2: if constexpr (R <= kRows) return tile<F, kVnni, R, 2>; break;
    case 3: if constexpr (R <= kRows) return tile<F, kVnni, R, 3>; break;
    case 4: if constexpr (R <= kRows) return tile<F, kVnni, R, 4>; break;
  }
  return nullptr;
}

template <class F, bool kVnni>
TileFn<F, kVnni> pick(int64_t r, int64_t t) {
  switch (r) {
    case 1: return pick_toks<F, kVnni, 1>(t);
    case 2: return pick_toks<F, kVnni, 2>(t);
    case 3: return pick_toks<F, kVnni, 3>(t);
    case 4: return pick_toks<F, kVnni, 4>(t);
  }
  return nullptr;
}

template <class F, bool kVnni>
void gemm(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
          size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  using Pack = typename F::Pack;
  const int64_t nb = k / kQK, ng = (nb + kGroup - 1) / kGroup;
  auto* pack = static_cast<Pack*>(detail::thread_scratch(sizeof(Pack) * ng * n_tok));
  const auto* ab = static_cast<const uint8_t*>(a);
  for (int64_t t = 0; t < n_tok; ++t)
    pack_row<Pack, typename F::ActBlock, F::kShift>(ab + t * a_stride, nb, pack + t * ng);

  const auto* wb = static_cast<const uint8_t*>(w);
  const int64_t row_step = n_tok == 1 ? kDecodeRows : kRows;
  const int64_t tok_step = n_tok == 1 ? 1 : kToks;
  for (int64_t r0 = 0; r0 < n_rows; r0 += row_step) {
    const int64_t nr = n_rows - r0 < row_step ? n_rows - r0 : row_step;
    for (int64_t t0 = 0; t0 < n_tok; t0 += tok_step) {
      const int64_t nt = n_tok - t0 < tok_step ? n_tok - t0 : tok_step;
      pick<F, kVnni>(nr, nt)(nb, wb + r0 * w_stride, w_stride, pack + t0 * ng, ng,
                             out + t0 * out_stride + r0, out_stride);
    }
  }
}

}  // namespace
}  // namespace baton::kernels::avx512
