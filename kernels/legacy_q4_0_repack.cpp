// Load-time repacking of Q4_0 weights into the 16-row groups that gemm_q4_0_x16 streams
// (layout: legacy_q4_0_x16.h), and back. Pure byte permutations within each group: same size,
// no arithmetic, so any ISA's gemm_q4_0_x16 reads the same bytes.
#include <cstring>

#include "kernels/blocks_legacy.h"
#include "kernels/legacy_kernels.h"

namespace baton::kernels::scalar {
namespace {

template <bool kToPacked>
void permute(const void* src, void* dst, int64_t n_rows, int64_t k) {
  constexpr int64_t kRows = 16;
  constexpr size_t kBB = sizeof(BlockQ4_0);
  const int64_t nb = k / kQK;
  const size_t row_bytes = static_cast<size_t>(nb) * kBB;
  for (int64_t r0 = 0; r0 + kRows <= n_rows; r0 += kRows) {
    const auto* s = static_cast<const uint8_t*>(src) + static_cast<size_t>(r0) * row_bytes;
    auto* d = static_cast<uint8_t*>(dst) + static_cast<size_t>(r0) * row_bytes;
    for (int64_t i = 0; i < nb; ++i) {
      const size_t packed = static_cast<size_t>(i) * 288;
      for (int64_t j = 0; j < kRows; ++j) {
        const size_t plain = static_cast<size_t>(j) * row_bytes + static_cast<size_t>(i) * kBB;
        auto move = [&](size_t p_off, size_t r_off, size_t n) {
          if constexpr (kToPacked) std::memcpy(d + packed + p_off, s + plain + r_off, n);
          else std::memcpy(d + plain + r_off, s + packed + p_off, n);
        };
        move(2 * j, 0, 2);
        for (size_t c = 0; c < 4; ++c) move(32 + 64 * c + 4 * j, 2 + 4 * c, 4);
      }
    }
  }
}

}  // namespace

void repack_q4_0_x16(const void* src, void* dst, int64_t n_rows, int64_t k) { permute<true>(src, dst, n_rows, k); }
void unrepack_q4_0_x16(const void* src, void* dst, int64_t n_rows, int64_t k) { permute<false>(src, dst, n_rows, k); }

}  // namespace baton::kernels::scalar
