// The load-time 16-row repack (TypeOps::repack / unrepack) shared by Q4_0, Q4_K and Q5_K: a pure
// byte permutation within each group of 16 rows, block by block, so the size stays the same and
// every ISA's gemm on the repacked layout reads the same bytes. The layouts themselves are in
// block32/q4_0_gemm_x16.h, kquant/q4_K_gemm_x16.h and kquant/q5_K_gemm_x16.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace baton::kernels::x16 {

constexpr int64_t kRows = 16;

// Rows [0, n_rows) (whole groups only) of k elements, blocks of Block (kBlockElems elements each).
// pieces(move) must call move(j, packed_offset, plain_offset, bytes) for every piece of one
// group's block: packed_offset within the group's block (16 * sizeof(Block) bytes), plain_offset
// within row j's block.
template <bool kToPacked, class Block, int64_t kBlockElems, class Pieces>
void permute(const void* src, void* dst, int64_t n_rows, int64_t k, Pieces&& pieces) {
  const int64_t nb = k / kBlockElems;
  const size_t row_bytes = static_cast<size_t>(nb) * sizeof(Block);
  for (int64_t r0 = 0; r0 + kRows <= n_rows; r0 += kRows) {
    const auto* s = static_cast<const uint8_t*>(src) + static_cast<size_t>(r0) * row_bytes;
    auto* d = static_cast<uint8_t*>(dst) + static_cast<size_t>(r0) * row_bytes;
    for (int64_t b = 0; b < nb; ++b) {
      const size_t packed = static_cast<size_t>(b) * kRows * sizeof(Block);
      const size_t plain = static_cast<size_t>(b) * sizeof(Block);
      pieces([&](int64_t j, size_t p_off, size_t r_off, size_t n) {
        const size_t row = static_cast<size_t>(j) * row_bytes + plain + r_off;
        if constexpr (kToPacked) std::memcpy(d + packed + p_off, s + row, n);
        else std::memcpy(d + row, s + packed + p_off, n);
      });
    }
  }
}

}  // namespace baton::kernels::x16
