// Scalar reference kernels of the legacy block formats (layouts in block32/blocks.h): the
// readable definition of every result, the oracle of the SIMD tests, and the fallback on CPUs
// without AVX2. Blocks are read through memcpy, so rows need no alignment.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/base/fp16.h"
#include "kernels/block32/blocks.h"
#include "kernels/block32/kernels.h"

namespace baton::kernels::scalar {
namespace {

template <class Block>
Block load_block(const void* base, int64_t i) {
  Block b;
  std::memcpy(&b, static_cast<const uint8_t*>(base) + i * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
  return b;
}

template <class Block>
void store_block(void* base, int64_t i, const Block& b) {
  std::memcpy(static_cast<uint8_t*>(base) + i * static_cast<int64_t>(sizeof(Block)), &b, sizeof(Block));
}

uint32_t load_qh(const uint8_t (&qh)[4]) {
  uint32_t v;
  std::memcpy(&v, qh, 4);
  return v;
}

// What cvtps2dq followed by the saturating packs does to a rounded value (NaN -> -128).
int8_t saturate_i8(float rounded) {
  if (!(rounded >= -128.0f)) return -128;  // also NaN
  if (rounded > 127.0f) return 127;
  return static_cast<int8_t>(rounded);
}

// amax/127 scaling shared by the Q8_0 and Q8_1 activation quantizers; returns d (unrounded).
float quantize_block_q8(const float* x, int8_t* q) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  for (int j = 0; j < kQK; ++j) q[j] = saturate_i8(std::nearbyint(x[j] * id));
  return d;
}

// Signed amax of a block: the element of largest magnitude (the first one on ties).
float signed_amax(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kQK; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void min_max(const float* x, float& min, float& max) {
  min = 3.402823466e+38f;
  max = -3.402823466e+38f;
  for (int j = 0; j < kQK; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
}

// C's (int8_t)float conversion for the values the quantizers produce; NaN and out-of-range
// values (only from non-finite input) are clamped instead of being undefined behaviour.
int to_i8(float v) {
  if (!(v > -128.0f)) return v != v ? 0 : -128;
  if (v >= 127.0f) return 127;
  return static_cast<int>(v);
}

int nibble(const uint8_t* qs, int j) {  // element j (0..31) of a 16-byte nibble array
  return j < kQK / 2 ? (qs[j] & 0x0F) : (qs[j - kQK / 2] >> 4);
}

int fifth_bit(uint32_t qh, int j) { return static_cast<int>((qh >> j) & 1u) << 4; }

}  // namespace

// ---- weight quantizers (llama.cpp's *_ref) ----

void quantize_q4_0_ref(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    const float d = signed_amax(x) / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 b;
    b.d = fp32_to_fp16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      const uint8_t lo = std::min(15, to_i8(x[j] * id + 8.5f));
      const uint8_t hi = std::min(15, to_i8(x[j + kQK / 2] * id + 8.5f));
      b.qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
    store_block(dst, i, b);
  }
}

void quantize_q4_1_ref(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    float min, max;
    min_max(x, min, max);
    const float d = (max - min) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_1 b;
    b.d = fp32_to_fp16(d);
    b.m = fp32_to_fp16(min);
    for (int j = 0; j < kQK / 2; ++j) {
      const uint8_t lo = std::min(15, to_i8((x[j] - min) * id + 0.5f));
      const uint8_t hi = std::min(15, to_i8((x[j + kQK / 2] - min) * id + 0.5f));
      b.qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
    store_block(dst, i, b);
  }
}

void quantize_q5_0_ref(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    const float d = signed_amax(x) / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ5_0 b;
    b.d = fp32_to_fp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const uint8_t lo = std::min(31, to_i8(x[j] * id + 16.5f));
      const uint8_t hi = std::min(31, to_i8(x[j + kQK / 2] * id + 16.5f));
      b.qs[j] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
      qh |= ((lo & 0x10u) >> 4) << j;
      qh |= ((hi & 0x10u) >> 4) << (j + kQK / 2);
    }
    std::memcpy(b.qh, &qh, 4);
    store_block(dst, i, b);
  }
}

void quantize_q5_1_ref(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    float min, max;
    min_max(x, min, max);
    const float d = (max - min) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ5_1 b;
    b.d = fp32_to_fp16(d);
    b.m = fp32_to_fp16(min);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      // llama.cpp does not clamp here; a value rounding to 32 keeps its low 5 bits (0).
      const uint8_t lo = static_cast<uint8_t>(to_i8((x[j] - min) * id + 0.5f));
      const uint8_t hi = static_cast<uint8_t>(to_i8((x[j + kQK / 2] - min) * id + 0.5f));
      b.qs[j] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
      qh |= ((lo & 0x10u) >> 4) << j;
      qh |= ((hi & 0x10u) >> 4) << (j + kQK / 2);
    }
    std::memcpy(b.qh, &qh, 4);
    store_block(dst, i, b);
  }
}

void quantize_q8_0_ref(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 b;
    b.d = fp32_to_fp16(d);
    for (int j = 0; j < kQK; ++j) b.qs[j] = saturate_i8(std::round(x[j] * id));
    store_block(dst, i, b);
  }
}

// ---- activation quantizers (llama.cpp's x86 quantize_row_q8_0 / q8_1) ----

void quantize_q8_0(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    BlockQ8_0 b;
    b.d = fp32_to_fp16(quantize_block_q8(src + i * kQK, b.qs));
    store_block(dst, i, b);
  }
}

void quantize_q8_1(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    BlockQ8_1 b;
    const float d = quantize_block_q8(src + i * kQK, b.qs);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) sum += b.qs[j];
    b.d = fp32_to_fp16(d);
    b.s = fp32_to_fp16(d * static_cast<float>(sum));
    store_block(dst, i, b);
  }
}

// ---- dequantization ----

void dequantize_q4_0(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const auto b = load_block<BlockQ4_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < kQK; ++j) dst[i * kQK + j] = static_cast<float>(nibble(b.qs, j) - 8) * d;
  }
}

void dequantize_q4_1(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const auto b = load_block<BlockQ4_1>(src, i);
    const float d = fp16_to_fp32(b.d), m = fp16_to_fp32(b.m);
    for (int j = 0; j < kQK; ++j) dst[i * kQK + j] = static_cast<float>(nibble(b.qs, j)) * d + m;
  }
}

void dequantize_q5_0(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const auto b = load_block<BlockQ5_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    const uint32_t qh = load_qh(b.qh);
    for (int j = 0; j < kQK; ++j) dst[i * kQK + j] = static_cast<float>((nibble(b.qs, j) | fifth_bit(qh, j)) - 16) * d;
  }
}

void dequantize_q5_1(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const auto b = load_block<BlockQ5_1>(src, i);
    const float d = fp16_to_fp32(b.d), m = fp16_to_fp32(b.m);
    const uint32_t qh = load_qh(b.qh);
    for (int j = 0; j < kQK; ++j) dst[i * kQK + j] = static_cast<float>(nibble(b.qs, j) | fifth_bit(qh, j)) * d + m;
  }
}

void dequantize_q8_0(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const auto b = load_block<BlockQ8_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < kQK; ++j) dst[i * kQK + j] = static_cast<float>(b.qs[j]) * d;
  }
}

void dequantize_q8_1(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const auto b = load_block<BlockQ8_1>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < kQK; ++j) dst[i * kQK + j] = static_cast<float>(b.qs[j]) * d;
  }
}

// ---- dot products: llama.cpp's x86 order (tinyBLAS_Q0_AVX for batches, ggml_vec_dot_*_q8_*
// for single tokens: the same arithmetic) ----
// Per block, 8 "lanes": lane i is the exact integer sum of the products of elements 4i..4i+3
// (weight value without its min, times the activation quant), converted to float;
// acc[i] = fma(d_w * d_a, lane_i, acc[i]) over the blocks in order; the result is
// hsum8(acc) = ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)). Types with a min (Q4_1, Q5_1) add
// summs = sum over blocks (in order) of m_w * s_a (product rounded, then added) after the hsum.
// Q4_0 instead follows llama.cpp's AVX2 "repack" kernels (ggml_gemv/gemm_q4_0_8x8_q8_0), which
// llama.cpp uses for every Q4_0 weight with a multiple of 8 rows: one float chain per output,
// acc = fma(float(block integer sum), d_w * d_a, acc) over the blocks in order, no lanes.
namespace {

struct DotQ4_0 {
  using W = BlockQ4_0;
  using A = BlockQ8_0;
  static constexpr bool kMin = false;
  static constexpr bool kChain = true;
  static int value(const W& w, int j) { return nibble(w.qs, j) - 8; }
};
struct DotQ5_0 {
  using W = BlockQ5_0;
  using A = BlockQ8_0;
  static constexpr bool kMin = false;
  static constexpr bool kChain = false;
  static int value(const W& w, int j) { return (nibble(w.qs, j) | fifth_bit(load_qh(w.qh), j)) - 16; }
};
struct DotQ8_0 {
  using W = BlockQ8_0;
  using A = BlockQ8_0;
  static constexpr bool kMin = false;
  static constexpr bool kChain = false;
  static int value(const W& w, int j) { return w.qs[j]; }
};
struct DotQ4_1 {
  using W = BlockQ4_1;
  using A = BlockQ8_1;
  static constexpr bool kMin = true;
  static constexpr bool kChain = false;
  static int value(const W& w, int j) { return nibble(w.qs, j); }
};
struct DotQ5_1 {
  using W = BlockQ5_1;
  using A = BlockQ8_1;
  static constexpr bool kMin = true;
  static constexpr bool kChain = false;
  static int value(const W& w, int j) { return nibble(w.qs, j) | fifth_bit(load_qh(w.qh), j); }
};

// The fixed horizontal sum of 8 lanes (hi128 + lo128, then movehl, then movehdup).
float hsum8(const float* l) {
  const float s0 = l[0] + l[4], s1 = l[1] + l[5], s2 = l[2] + l[6], s3 = l[3] + l[7];
  return (s0 + s2) + (s1 + s3);
}

template <class Dot>
float dot_row(int64_t nb, const uint8_t* wr, const uint8_t* at) {
  if constexpr (Dot::kChain) {
    float acc = 0.0f;
    for (int64_t i = 0; i < nb; ++i) {
      const auto w = load_block<typename Dot::W>(wr, i);
      const auto a = load_block<typename Dot::A>(at, i);
      int sumi = 0;
      for (int j = 0; j < kQK; ++j) sumi += Dot::value(w, j) * a.qs[j];
      acc = std::fma(static_cast<float>(sumi), fp16_to_fp32(w.d) * fp16_to_fp32(a.d), acc);
    }
    return acc;
  }
  float acc[8] = {};
  float summs = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto w = load_block<typename Dot::W>(wr, i);
    const auto a = load_block<typename Dot::A>(at, i);
    const float d = fp16_to_fp32(w.d) * fp16_to_fp32(a.d);
    for (int l = 0; l < 8; ++l) {
      int sumi = 0;
      for (int j = 4 * l; j < 4 * l + 4; ++j) sumi += Dot::value(w, j) * a.qs[j];
      acc[l] = std::fma(d, static_cast<float>(sumi), acc[l]);
    }
    if constexpr (Dot::kMin) summs += fp16_to_fp32(w.m) * fp16_to_fp32(a.s);
  }
  return hsum8(acc) + summs;
}

template <class Dot>
void gemm_blocks(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                 int64_t n_tok, float* out, size_t out_stride) {
  const int64_t nb = k / kQK;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t r = 0; r < n_rows; ++r)
      out[t * out_stride + r] = dot_row<Dot>(nb, wb + r * w_stride, ab + t * a_stride);
}

}  // namespace

void gemm_q4_0(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
               float* out, size_t out_stride) {
  gemm_blocks<DotQ4_0>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_q4_1(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
               float* out, size_t out_stride) {
  gemm_blocks<DotQ4_1>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_q5_0(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
               float* out, size_t out_stride) {
  gemm_blocks<DotQ5_0>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_q5_1(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
               float* out, size_t out_stride) {
  gemm_blocks<DotQ5_1>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}
void gemm_q8_0(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
               float* out, size_t out_stride) {
  gemm_blocks<DotQ8_0>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

}  // namespace baton::kernels::scalar
