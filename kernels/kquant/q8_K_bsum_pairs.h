// Per token and super-block of Q8_K activations, the 4 dwords (bsum32_2P, bsum32_2P+1) as int16
// pairs, P = 0..3, with bsum32_J = bsums[2J] + bsums[2J + 1], the activation sum of the 32 elements
// of sub-block J (|bsum32| <= 32 * 128: exact in int16). The Q4_K / Q5_K mins term
// Σ_J m_J * bsum32_J is then 4 vpdpwssd per token and super-block against lane pairs
// (m_2P, m_2P+1) instead of 8: the repacked K-quant gemms are bound by the multiply port.
// Needs valid Q8_K blocks (bsums the sums of their quants, as quantize_q8_k writes them); bsums
// of arbitrary bytes could overflow the int16 pair sums.
// Internal linkage: included by translation units built for different ISAs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/kquant/blocks.h"

namespace baton::kernels {
namespace {  // NOLINT: one copy per ISA translation unit (different -march), never shared

constexpr int kBsumPairsPerBlock = 4;

// dst: n_tok * nb * kBsumPairsPerBlock dwords, token-major.
inline void bsum_pairs(const uint8_t* a, size_t a_stride, int64_t n_tok, int64_t nb, uint32_t* dst) {
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t b = 0; b < nb; ++b) {
      int16_t bs[16];
      std::memcpy(
          bs,
          a + static_cast<size_t>(t) * a_stride + static_cast<size_t>(b) * sizeof(BlockQ8K) + offsetof(BlockQ8K, bsums),
          sizeof bs);
      for (int p = 0; p < kBsumPairsPerBlock; ++p) {
        const auto lo = static_cast<uint16_t>(bs[4 * p] + bs[4 * p + 1]);
        const auto hi = static_cast<uint16_t>(bs[4 * p + 2] + bs[4 * p + 3]);
        *dst++ = lo | static_cast<uint32_t>(hi) << 16;
      }
    }
}

}  // namespace
}  // namespace baton::kernels
