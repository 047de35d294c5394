// Load-time repacking of Q4_K weights into the 16-row groups that the x16 gemm streams
// (layout: kquant/q4_K_gemm_x16.h), and back (the permutation itself: repack_x16.h).
#include <cstddef>

#include "kernels/kquant/blocks.h"
#include "kernels/kquant/qx_K_x16.h"
#include "kernels/core/repack_x16.h"

namespace baton::kernels::scalar {
namespace {

// move(j, packed offset, offset in row j's block, bytes) for every piece of a group's super-block.
constexpr auto kPieces = [](auto&& move) {
  for (int64_t j = 0; j < x16::kRows; ++j) {
    move(j, 2 * j, offsetof(BlockQ4K, d), 2);
    move(j, 32 + 2 * j, offsetof(BlockQ4K, dmin), 2);
    for (int u = 0; u < 3; ++u) move(j, 64 + 64 * u + 4 * j, offsetof(BlockQ4K, scales) + 4 * u, 4);
    for (int c = 0; c < 4; ++c)
      for (int q = 0; q < 8; ++q) move(j, 256 + 64 * (8 * c + q) + 4 * j, offsetof(BlockQ4K, qs) + 32 * c + 4 * q, 4);
  }
};

}  // namespace

void repack_q4_k_x16(const void* src, void* dst, int64_t n_rows, int64_t k) {
  x16::permute<true, BlockQ4K, kQK_K>(src, dst, n_rows, k, kPieces);
}
void unrepack_q4_k_x16(const void* src, void* dst, int64_t n_rows, int64_t k) {
  x16::permute<false, BlockQ4K, kQK_K>(src, dst, n_rows, k, kPieces);
}

}  // namespace baton::kernels::scalar
