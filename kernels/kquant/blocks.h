// Block layouts of ggml's K-quant formats, byte for byte as in GGUF files. Every super-block
// covers QK_K = 256 consecutive elements of a row. Scales are IEEE half (f16) bit patterns.
//
//   Q2_K: 16 sub-blocks of 16. x = d * (sc & 15) * q - dmin * (sc >> 4), q in 0..3.
//         Element 128n + 32j + l (l < 32) is bits 2j..2j+1 of qs[32n + l]; scales[s] for
//         sub-block s = element / 16.
//   Q3_K: 16 sub-blocks of 16. x = d * (sc - 32) * (q - 4), q in 0..7: the low two bits as in
//         Q2_K, bit 2 is bit (e / 32) of hmask[e % 32]. The 6-bit scales are packed: scales[0..7]
//         hold the low nibbles of sc 0..7 (low) and 8..15 (high); scales[8 + (s % 4)] holds the
//         high two bits of sc s at bit 2 * (s / 4).
//   Q4_K: 8 sub-blocks of 32. x = d * sc * q - dmin * m, q in 0..15. Element 64c + l is the
//         low nibble of qs[32c + l], element 64c + 32 + l its high nibble. 6-bit sc/m packed
//         in scales[12] (see unpack_scale_min_k4).
//   Q5_K: as Q4_K with q in 0..31: bit 4 of element 64c + l is bit 2c of qh[l], of element
//         64c + 32 + l bit 2c + 1.
//   Q6_K: 16 sub-blocks of 16. x = d * sc * (q - 32), q in 0..63, sc int8. In each half n of
//         128: element 128n + l (l < 32) is the low nibble of ql[64n + l], +32 the low nibble
//         of ql[64n + 32 + l], +64 and +96 their high nibbles; bits 4..5 come from qh[32n + l]
//         bits 0..1, 2..3, 4..5, 6..7 for +0, +32, +64, +96.
//   Q8_K: the activation format of all of them. x = d * q, q in -127..127 (d is f32), and
//         bsums[s] = the sum of q over elements 16s..16s+15.
#pragma once

#include <cstddef>
#include <cstdint>

namespace baton::kernels {

inline constexpr int kQK_K = 256;  // elements per K-quant super-block

struct BlockQ2K {
  uint8_t scales[kQK_K / 16];  // low nibble scale, high nibble min
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};
struct BlockQ3K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
struct BlockQ4K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ5K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ6K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
struct BlockQ8K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

static_assert(sizeof(BlockQ2K) == 84);
static_assert(sizeof(BlockQ3K) == 110);
static_assert(sizeof(BlockQ4K) == 144);
static_assert(sizeof(BlockQ5K) == 176);
static_assert(sizeof(BlockQ6K) == 210);
static_assert(sizeof(BlockQ8K) == 292);
static_assert(offsetof(BlockQ2K, d) == 80 && offsetof(BlockQ3K, d) == 108);
static_assert(offsetof(BlockQ4K, qs) == 16 && offsetof(BlockQ5K, qs) == 48);
static_assert(offsetof(BlockQ6K, d) == 208 && offsetof(BlockQ8K, bsums) == 260);

struct ScaleMin {
  uint8_t scale;
  uint8_t min;
};

// Internal linkage on purpose: this header is included by files built for different ISAs, and
// an inline function with external linkage would let the linker keep one ISA's copy for all.
namespace {

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K super-block: j < 4 are the low
// six bits of scales[j] / scales[j + 4]; j >= 4 take their low four bits from the nibbles of
// scales[j + 4] and their high two from the top bits of scales[j - 4] / scales[j].
constexpr ScaleMin unpack_scale_min_k4(int j, const uint8_t* scales) {
  if (j < 4) return {static_cast<uint8_t>(scales[j] & 63), static_cast<uint8_t>(scales[j + 4] & 63)};
  return {static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4)),
          static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4))};
}

// The 16 6-bit scales of a Q3_K super-block, still biased by +32 (0..63).
constexpr uint8_t unpack_scale_q3k(int s, const uint8_t* scales) {
  const int low = s < 8 ? (scales[s] & 0xF) : (scales[s - 8] >> 4);
  const int high = (scales[8 + s % 4] >> (2 * (s / 4))) & 3;
  return static_cast<uint8_t>(low | (high << 4));
}

}  // namespace

}  // namespace baton::kernels
