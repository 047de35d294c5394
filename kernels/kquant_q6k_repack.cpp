// Load-time repacking of Q6_K weights into the 16-row groups that the x16 gemm streams
// (layout: kquant_q6k_x16.h), and back (the permutation itself: repack_x16.h).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/blocks_k.h"
#include "kernels/kquant_x16.h"
#include "kernels/repack_x16.h"

namespace baton::kernels::scalar {
namespace {

static_assert(sizeof(BlockQ6K) * x16::kRows == 3360);

// move(j, packed offset, offset in row j's block, bytes) for every piece of a group's super-block
// b (odd super-blocks put d first: kquant_q6k_x16.h).
void pieces(int64_t b, const auto& move) {
  const size_t sc0 = (b & 1) ? 32 : 0, d0 = (b & 1) ? 0 : 3328;
  for (int64_t j = 0; j < x16::kRows; ++j) {
    move(j, d0 + 2 * static_cast<size_t>(j), offsetof(BlockQ6K, d), 2);
    for (int u = 0; u < 4; ++u)
      move(j, sc0 + 64 * u + 4 * static_cast<size_t>(j), offsetof(BlockQ6K, scales) + 4 * u, 4);
    // row j = 4 (i / 2) + 2 h + i % 2: half h, slot i (dwords 2i, 2i + 1 of each unit)
    const size_t h = (static_cast<size_t>(j) >> 1) & 1, i = 2 * (static_cast<size_t>(j) >> 2) + (j & 1);
    for (size_t l = 0; l < 8; ++l) {
      const size_t base = sc0 + 256 + 384 * l + 192 * h + 8 * i;
      move(j, base, offsetof(BlockQ6K, ql) + 4 * l, 4);
      move(j, base + 4, offsetof(BlockQ6K, ql) + 64 + 4 * l, 4);
      move(j, base + 64, offsetof(BlockQ6K, ql) + 32 + 4 * l, 4);
      move(j, base + 68, offsetof(BlockQ6K, ql) + 96 + 4 * l, 4);
      move(j, base + 128, offsetof(BlockQ6K, qh) + 4 * l, 4);
      move(j, base + 132, offsetof(BlockQ6K, qh) + 32 + 4 * l, 4);
    }
  }
}

// repack_x16.h's permute, with the super-block index passed to pieces.
template <bool kToPacked>
void permute(const void* src, void* dst, int64_t n_rows, int64_t k) {
  const int64_t nb = k / kQK_K;
  const size_t row_bytes = static_cast<size_t>(nb) * sizeof(BlockQ6K);
  for (int64_t r0 = 0; r0 + x16::kRows <= n_rows; r0 += x16::kRows) {
    const auto* s = static_cast<const uint8_t*>(src) + static_cast<size_t>(r0) * row_bytes;
    auto* d = static_cast<uint8_t*>(dst) + static_cast<size_t>(r0) * row_bytes;
    for (int64_t b = 0; b < nb; ++b) {
      const size_t packed = static_cast<size_t>(b) * x16::kRows * sizeof(BlockQ6K);
      const size_t plain = static_cast<size_t>(b) * sizeof(BlockQ6K);
      pieces(b, [&](int64_t j, size_t p_off, size_t r_off, size_t n) {
        const size_t row = static_cast<size_t>(j) * row_bytes + plain + r_off;
        if constexpr (kToPacked) std::memcpy(d + packed + p_off, s + row, n);
        else std::memcpy(d + row, s + packed + p_off, n);
      });
    }
  }
}

}  // namespace

void repack_q6_k_x16(const void* src, void* dst, int64_t n_rows, int64_t k) {
  permute<true>(src, dst, n_rows, k);
}
void unrepack_q6_k_x16(const void* src, void* dst, int64_t n_rows, int64_t k) {
  permute<false>(src, dst, n_rows, k);
}

}  // namespace baton::kernels::scalar
