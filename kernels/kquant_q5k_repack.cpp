// Load-time repacking of Q5_K weights into the 16-row groups that the x16 gemm streams
// (layout: kquant_q5k_x16.h), and back. Pure byte permutations within each group: same size.
#include <cstring>

#include "kernels/blocks_k.h"
#include "kernels/kquant_x16.h"

namespace baton::kernels::scalar {
namespace {

constexpr int64_t kRows = 16;
constexpr size_t kGroupBlock = 2816;
static_assert(kGroupBlock == kRows * sizeof(BlockQ5K));

// Calls move(packed_offset, plain_offset, bytes) for every piece of one group's super-block b
// (offsets relative to the group's super-block b and to row j's block b).
template <class Move>
void for_each_piece(Move&& move) {
  for (int64_t j = 0; j < kRows; ++j) {
    move(j, 2 * j, offsetof(BlockQ5K, d), 2);
    move(j, 32 + 2 * j, offsetof(BlockQ5K, dmin), 2);
    for (int u = 0; u < 3; ++u) move(j, 64 + 64 * u + 4 * j, offsetof(BlockQ5K, scales) + 4 * u, 4);
    for (int l = 0; l < 8; ++l) {
      const size_t blk = 256 + 320 * static_cast<size_t>(l) + 4 * static_cast<size_t>(j);
      move(j, blk, offsetof(BlockQ5K, qh) + 4 * l, 4);
      for (int c = 0; c < 4; ++c) move(j, blk + 64 * (1 + c), offsetof(BlockQ5K, qs) + 32 * c + 4 * l, 4);
    }
  }
}

template <bool kToPacked>
void permute(const void* src, void* dst, int64_t n_rows, int64_t k) {
  const int64_t nb = k / kQK_K;
  const size_t row_bytes = static_cast<size_t>(nb) * sizeof(BlockQ5K);
  for (int64_t r0 = 0; r0 + kRows <= n_rows; r0 += kRows) {
    const auto* s = static_cast<const uint8_t*>(src) + static_cast<size_t>(r0) * row_bytes;
    auto* d = static_cast<uint8_t*>(dst) + static_cast<size_t>(r0) * row_bytes;
    for (int64_t b = 0; b < nb; ++b) {
      const size_t packed = static_cast<size_t>(b) * kGroupBlock;
      const size_t plain = static_cast<size_t>(b) * sizeof(BlockQ5K);
      for_each_piece([&](int64_t j, size_t p_off, size_t r_off, size_t n) {
        const size_t row = static_cast<size_t>(j) * row_bytes + plain + r_off;
        if constexpr (kToPacked) std::memcpy(d + packed + p_off, s + row, n);
        else std::memcpy(d + row, s + packed + p_off, n);
      });
    }
  }
}

}  // namespace

void repack_q5_k_x16(const void* src, void* dst, int64_t n_rows, int64_t k) { permute<true>(src, dst, n_rows, k); }
void unrepack_q5_k_x16(const void* src, void* dst, int64_t n_rows, int64_t k) { permute<false>(src, dst, n_rows, k); }

}  // namespace baton::kernels::scalar
