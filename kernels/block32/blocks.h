// Block layouts of ggml's "legacy" quantization formats, byte for byte as in GGUF files.
// Every block covers 32 consecutive elements of a row. Scales are IEEE half (f16) bit patterns.
//   Q4_0: x = d * (q - 8),  q in 0..15; qs[j] low nibble = element j, high nibble = element j+16
//   Q4_1: x = d * q + m,    q in 0..15; nibble order as Q4_0
//   Q5_0: x = d * (q - 16), q in 0..31; low 4 bits as Q4_0, bit 4 of element j = bit j of qh
//   Q5_1: x = d * q + m,    q in 0..31; bits as Q5_0
//   Q8_0: x = d * q,        q in -128..127
//   Q8_1: x = d * q, plus s = d * sum(q) (rounded to f16): the activation format for Q4_1/Q5_1
#pragma once

#include <cstdint>

namespace baton::kernels {

inline constexpr int kQK = 32;  // elements per legacy block

struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];
};
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[kQK];
};

static_assert(sizeof(BlockQ4_0) == 18 && alignof(BlockQ4_0) == 2);
static_assert(sizeof(BlockQ4_1) == 20 && alignof(BlockQ4_1) == 2);
static_assert(sizeof(BlockQ5_0) == 22 && alignof(BlockQ5_0) == 2);
static_assert(sizeof(BlockQ5_1) == 24 && alignof(BlockQ5_1) == 2);
static_assert(sizeof(BlockQ8_0) == 34 && alignof(BlockQ8_0) == 2);
static_assert(sizeof(BlockQ8_1) == 36 && alignof(BlockQ8_1) == 2);

}  // namespace baton::kernels
