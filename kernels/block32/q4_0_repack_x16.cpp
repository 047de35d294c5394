// Load-time repacking of Q4_0 weights into the 16-row groups that gemm_q4_0_x16 streams
// (layout: block32/q4_0_gemm_x16.h), and back. Pure byte permutations within each group: same size,
// no arithmetic, so any ISA's gemm_q4_0_x16 reads the same bytes.
#include <cstddef>

#include "kernels/block32/blocks.h"
#include "kernels/block32/kernels.h"
#include "kernels/core/repack_x16.h"

namespace baton::kernels::scalar {
namespace {

// move(j, packed offset, offset in row j's block, bytes) for every piece of a group's block.
constexpr auto kPieces = [](auto&& move) {
  for (int64_t j = 0; j < x16::kRows; ++j) {
    move(j, 2 * j, 0, 2);
    for (size_t c = 0; c < 4; ++c) move(j, 32 + 64 * c + 4 * j, 2 + 4 * c, 4);
  }
};

}  // namespace

void repack_q4_0_x16(const void* src, void* dst, int64_t n_rows, int64_t k) {
  x16::permute<true, BlockQ4_0, kQK>(src, dst, n_rows, k, kPieces);
}
void unrepack_q4_0_x16(const void* src, void* dst, int64_t n_rows, int64_t k) {
  x16::permute<false, BlockQ4_0, kQK>(src, dst, n_rows, k, kPieces);
}

}  // namespace baton::kernels::scalar
