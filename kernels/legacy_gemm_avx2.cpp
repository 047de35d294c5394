// AVX2 gemms of the legacy formats (layouts in blocks_legacy.h).
//
// Design (as the AVX-512 one, at half width). A "group" is 2 consecutive blocks. For one row
// and one group the weights are unpacked once into two ymm of bytes, lo = elements 0..15 of
// each block and hi = elements 16..31 (128-bit lane j = block j), and the block scales are
// broadcast over each block's four int32 lanes. Every token's activation blocks are packed
// once per call into the same layout with their scales and, for Q4_0/Q5_0 (zero point z),
// the correction -z * (pair sums) as int16. For each (row, token):
//     p   = maddubs(w_lo, a_lo) + maddubs(w_hi, a_hi) + corr      (int16, exact)
//     acc = fma(float(madd(p, 1)), d_w * d_a, acc)                  (+ fma(m_w, s_a, acc))
// Q8_0 weights instead move their signs onto the activations (|w| * sign(a, w)) and sum the
// two halves in int32. Lanes are summed in a fixed order at the end; each (row, token) pair
// sees this exact sequence whatever tile it is in, so results are batch invariant. The last,
// partial group is zero-padded (zero scales and quants add exact zeros). Tiles: 2 rows x 4
// tokens for prefill, one row for decode (see kPrefetchBytes).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/blocks_legacy.h"
#include "kernels/kernel_scratch.h"
#include "kernels/legacy_kernels.h"

namespace baton::kernels::avx2 {
namespace {

constexpr int kGroup = 2;

__m128i load16(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
__m256i load_pair(const uint8_t* p0, const uint8_t* p1) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(load16(p0)), load16(p1), 1);
}
uint32_t load_u16_pair(const uint8_t* p0, const uint8_t* p1) {
  uint16_t a, b;
  __builtin_memcpy(&a, p0, 2);
  __builtin_memcpy(&b, p1, 2);
  return a | (static_cast<uint32_t>(b) << 16);
}
// f16 values h0, h1 -> [h0 x4, h1 x4] as floats.
__m256 scales(uint32_t h01) {
  __m128i x = _mm_cvtsi32_si128(static_cast<int>(h01));
  x = _mm_unpacklo_epi16(x, x);
  return _mm256_cvtph_ps(_mm_unpacklo_epi32(x, x));
}
// f16 values h0, h1 -> [h0, 0, 0, 0, h1, 0, 0, 0] as floats.
__m256 first_lane_scales(uint32_t h01) {
  return _mm256_cvtph_ps(_mm_cvtepu16_epi64(_mm_cvtsi32_si128(static_cast<int>(h01))));
}
// 32 bits -> 32 bytes of 0xFF (bit set) or 0x00.
__m256i bytes_from_bits(uint32_t bits) {
  const __m256i shuffle = _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101,
                                             0x0202020202020202, 0x0303030303030303);
  const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), shuffle);
  const __m256i bit = _mm256_set1_epi64x(0x8040201008040201);
  return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
}

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// ---- packed activations ----

struct alignas(32) PackQ8_0 {
  __m256i lo, hi, corr;  // corr: -zero_point * (sum of the 4 activations of each int16 pair)
  __m256 d;
};
struct alignas(32) PackQ8_1 {
  __m256i lo, hi;
  __m256 d, s;
};

template <int kZeroShift>  // zero point 1 << kZeroShift; < 0: none
void pack_group(const uint8_t* p, PackQ8_0& o) {
  constexpr int kB = sizeof(BlockQ8_0);
  o.lo = load_pair(p + 2, p + kB + 2);
  o.hi = load_pair(p + 18, p + kB + 18);
  o.d = scales(load_u16_pair(p, p + kB));
  if constexpr (kZeroShift >= 0) {
    const __m256i ones = _mm256_set1_epi8(1);
    const __m256i sums = _mm256_add_epi16(_mm256_maddubs_epi16(ones, o.lo), _mm256_maddubs_epi16(ones, o.hi));
    o.corr = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sums, kZeroShift));
  } else {
    o.corr = _mm256_setzero_si256();
  }
}

template <int>
void pack_group(const uint8_t* p, PackQ8_1& o) {
  constexpr int kB = sizeof(BlockQ8_1);
  o.lo = load_pair(p + 4, p + kB + 4);
  o.hi = load_pair(p + 20, p + kB + 20);
  o.d = scales(load_u16_pair(p, p + kB));
  o.s = scales(load_u16_pair(p + 2, p + kB + 2));
}

template <class Pack, class Block, int kZeroShift>
void pack_row(const uint8_t* a, int64_t nb, Pack* out) {
  constexpr int64_t kGroupBytes = kGroup * sizeof(Block);
  const int64_t full = nb / kGroup;
  for (int64_t g = 0; g < full; ++g) pack_group<kZeroShift>(a + g * kGroupBytes, out[g]);
  if (nb > full * kGroup) {
    alignas(32) uint8_t buf[kGroupBytes] = {};
    __builtin_memcpy(buf, a + full * kGroupBytes, sizeof(Block));
    pack_group<kZeroShift>(buf, out[full]);
  }
}

// ---- weight formats ----

struct NibbleRow {
  __m256i lo, hi;
  __m256 d, m;
};

template <class Block, int kD, int kM, int kQh, int kQs, int kZeroShift, class Act>
struct NibbleFormat {
  using Pack = std::conditional_t<std::is_same_v<Act, BlockQ8_0>, PackQ8_0, PackQ8_1>;
  using ActBlock = Act;
  using Row = NibbleRow;
  static constexpr int kBlockBytes = sizeof(Block);
  static constexpr int kGroupBytes = kGroup * kBlockBytes;
  static constexpr int kShift = kZeroShift;

  static Row load(const uint8_t* p) {
    const uint8_t* p1 = p + kBlockBytes;
    const __m256i raw = load_pair(p + kQs, p1 + kQs);
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    Row row;
    row.lo = _mm256_and_si256(raw, low4);
    row.hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
    if constexpr (kQh >= 0) {
      uint32_t qh0, qh1;
      __builtin_memcpy(&qh0, p + kQh, 4);
      __builtin_memcpy(&qh1, p1 + kQh, 4);
      const __m256i bit4 = _mm256_set1_epi8(16);
      const uint32_t lo_bits = (qh0 & 0xFFFFu) | (qh1 << 16), hi_bits = (qh0 >> 16) | (qh1 & 0xFFFF0000u);
      row.lo = _mm256_or_si256(row.lo, _mm256_and_si256(bytes_from_bits(lo_bits), bit4));
      row.hi = _mm256_or_si256(row.hi, _mm256_and_si256(bytes_from_bits(hi_bits), bit4));
    }
    row.d = scales(load_u16_pair(p + kD, p1 + kD));
    if constexpr (kM >= 0) row.m = first_lane_scales(load_u16_pair(p + kM, p1 + kM));
    else row.m = _mm256_setzero_ps();
    return row;
  }

  static __m256i pairs(const Row& w, const __m256i& a_lo, const __m256i& a_hi) {
    return _mm256_add_epi16(_mm256_maddubs_epi16(w.lo, a_lo), _mm256_maddubs_epi16(w.hi, a_hi));
  }
  static __m256 dot(const Row& w, const PackQ8_0& a, __m256 acc) {
    const __m256i p = _mm256_add_epi16(pairs(w, a.lo, a.hi), a.corr);
    const __m256i i = _mm256_madd_epi16(p, _mm256_set1_epi16(1));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(i), _mm256_mul_ps(w.d, a.d), acc);
  }
  static __m256 dot(const Row& w, const PackQ8_1& a, __m256 acc) {
    const __m256i i = _mm256_madd_epi16(pairs(w, a.lo, a.hi), _mm256_set1_epi16(1));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i), _mm256_mul_ps(w.d, a.d), acc);
    return _mm256_fmadd_ps(w.m, a.s, acc);
  }
};

using FormatQ4_0 = NibbleFormat<BlockQ4_0, 0, -1, -1, 2, 3, BlockQ8_0>;
using FormatQ4_1 = NibbleFormat<BlockQ4_1, 0, 2, -1, 4, -1, BlockQ8_1>;
using FormatQ5_0 = NibbleFormat<BlockQ5_0, 0, -1, 2, 6, 4, BlockQ8_0>;
using FormatQ5_1 = NibbleFormat<BlockQ5_1, 0, 2, 4, 8, -1, BlockQ8_1>;

struct Q8Row {
  __m256i abs_lo, abs_hi, lo, hi;
  __m256 d;
};

struct FormatQ8_0 {
  using Pack = PackQ8_0;
  using ActBlock = BlockQ8_0;
  using Row = Q8Row;
  static constexpr int kBlockBytes = sizeof(BlockQ8_0);
  static constexpr int kGroupBytes = kGroup * kBlockBytes;
  static constexpr int kShift = -1;

  static Row load(const uint8_t* p) {
    const uint8_t* p1 = p + kBlockBytes;
    Row row;
    row.lo = load_pair(p + 2, p1 + 2);
    row.hi = load_pair(p + 18, p1 + 18);
    row.abs_lo = _mm256_sign_epi8(row.lo, row.lo);
    row.abs_hi = _mm256_sign_epi8(row.hi, row.hi);
    row.d = scales(load_u16_pair(p, p1));
    return row;
  }
  static __m256 dot(const Row& w, const PackQ8_0& a, __m256 acc) {
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i lo = _mm256_madd_epi16(_mm256_maddubs_epi16(w.abs_lo, _mm256_sign_epi8(a.lo, w.lo)), ones);
    const __m256i hi = _mm256_madd_epi16(_mm256_maddubs_epi16(w.abs_hi, _mm256_sign_epi8(a.hi, w.hi)), ones);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(lo, hi)), _mm256_mul_ps(w.d, a.d), acc);
  }
};

template <class F>
typename F::Row load_row_partial(const uint8_t* p) {  // the one block of an odd count
  alignas(32) uint8_t buf[F::kGroupBytes] = {};
  __builtin_memcpy(buf, p, F::kBlockBytes);
  return F::load(buf);
}

// ---- tiles and the entry ----

// Decode streams each weight row once; one sequential stream (a 1-row tile) reads DRAM much
// faster than several interleaved rows (measured 16 vs 7-9 GB/s for Q4_0 4096x4096), helped a
// little by a short software prefetch.
constexpr int kPrefetchBytes = 256;

template <class F, int R, int T>
void tile(int64_t nb, const uint8_t* w, size_t w_stride, const typename F::Pack* pack, int64_t ng,
          float* out, size_t out_stride) {
  __m256 acc[R][T];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();

  const int64_t full = nb / kGroup;
  for (int64_t g = 0; g < full; ++g) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = w + r * w_stride + g * F::kGroupBytes;
      if constexpr (T == 1) _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchBytes), _MM_HINT_T0);
      const auto row = F::load(p);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) acc[r][t] = F::dot(row, pack[t * ng + g], acc[r][t]);
    }
  }
  if (nb > full * kGroup) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const auto row = load_row_partial<F>(w + r * w_stride + full * F::kGroupBytes);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) acc[r][t] = F::dot(row, pack[t * ng + full], acc[r][t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) out[t * out_stride + r] = hsum(acc[r][t]);
}

template <class F>
using TileFn = void (*)(int64_t, const uint8_t*, size_t, const typename F::Pack*, int64_t, float*, size_t);

constexpr int kDecodeRows = 1;  // tile for n_tok == 1 (see kPrefetchBytes)
constexpr int kRows = 2;        // tile for n_tok > 1 (2x4 measured 8-29% faster than 4x2 or 3x3)
constexpr int kToks = 4;
static_assert(kDecodeRows <= kRows);

template <class F, int R>
TileFn<F> pick_toks(int64_t t) {
  switch (t) {
    case 1: return tile<F, R, 1>;
    case 2: if constexpr (R <= kRows) return tile<F, R, 2>; break;
    case 3: if constexpr (R <= kRows) return tile<F, R, 3>; break;
    case 4: if constexpr (R <= kRows) return tile<F, R, 4>; break;
  }
  return nullptr;
}

template <class F>
TileFn<F> pick(int64_t r, int64_t t) {
  switch (r) {
    case 1: return pick_toks<F, 1>(t);
    case 2: return pick_toks<F, 2>(t);
  }
  return nullptr;
}

template <class F>
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
      pick<F>(nr, nt)(nb, wb + r0 * w_stride, w_stride, pack + t0 * ng, ng,
                      out + t0 * out_stride + r0, out_stride);
    }
  }
}

}  // namespace

void gemm_q4_0(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm<FormatQ4_0>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_q4_1(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm<FormatQ4_1>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_q5_0(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm<FormatQ5_0>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_q5_1(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm<FormatQ5_1>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_q8_0(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_tok, float* out, size_t out_stride) {
  gemm<FormatQ8_0>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

}  // namespace baton::kernels::avx2
