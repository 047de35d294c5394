// Load-time repacking of Q5_K weights into the 16-row groups that the x16 gemm streams
// (layout: kquant/q5_K_gemm_x16.h), and back (the permutation itself: repack_x16.h); and into the AVX2
// variant of that layout (x16p: kquant/q5_K_gemm_x16p_avx2.cpp), which also moves single qh bits.
#include <cstddef>
#include <cstring>

#include "kernels/kquant/blocks.h"
#include "kernels/kquant/qx_K_x16.h"
#include "kernels/core/repack_x16.h"

namespace baton::kernels::scalar {
namespace {

static_assert(sizeof(BlockQ5K) * x16::kRows == 2816);

// move(j, packed offset, offset in row j's block, bytes) for every piece of a group's super-block.
constexpr auto kPieces = [](auto&& move) {
  for (int64_t j = 0; j < x16::kRows; ++j) {
    move(j, 2 * j, offsetof(BlockQ5K, d), 2);
    move(j, 32 + 2 * j, offsetof(BlockQ5K, dmin), 2);
    for (int u = 0; u < 3; ++u) move(j, 64 + 64 * u + 4 * j, offsetof(BlockQ5K, scales) + 4 * u, 4);
    for (int l = 0; l < 8; ++l) {
      const size_t blk = 256 + 320 * static_cast<size_t>(l) + 4 * static_cast<size_t>(j);
      move(j, blk, offsetof(BlockQ5K, qh) + 4 * l, 4);
      for (int c = 0; c < 4; ++c) move(j, blk + 64 * (1 + c), offsetof(BlockQ5K, qs) + 32 * c + 4 * l, 4);
    }
  }
};

}  // namespace

void repack_q5_k_x16(const void* src, void* dst, int64_t n_rows, int64_t k) {
  x16::permute<true, BlockQ5K, kQK_K>(src, dst, n_rows, k, kPieces);
}
void unrepack_q5_k_x16(const void* src, void* dst, int64_t n_rows, int64_t k) {
  x16::permute<false, BlockQ5K, kQK_K>(src, dst, n_rows, k, kPieces);
}

}  // namespace baton::kernels::scalar

// ---- The AVX2 variant (kquant/q5_K_gemm_x16p_avx2.cpp): the x16 layout with the quant bytes of a lane block
// regrouped so that each row dword of a unit holds two sub-blocks, and the qh bits moved to match.
namespace baton::kernels::scalar {
namespace {

// Unit u (0..3), byte k (0..3) of a row's dword in lane block L: plain qs byte 32 c + 4 L + pos
// (low nibble: sub-block 2c, high: 2c + 1).
constexpr int x16p_pair(int u, int k) { return 2 * (u / 2) + k / 2; }
constexpr int x16p_pos(int u, int k) { return 2 * (u % 2) + k % 2; }

// The qh bit permutation of one row and lane block as a 32-bit word (byte i = qh byte i): for
// each source byte position and value, its bits in the destination word. Tables, since loading a
// large model moves every bit of it.
struct QhTables {
  uint32_t to_packed[4][256], to_plain[4][256];
  constexpr QhTables() : to_packed{}, to_plain{} {
    for (int u = 0; u < 4; ++u)
      for (int kk = 0; kk < 4; ++kk)
        for (int n = 0; n < 2; ++n) {
          const int p_byte = kk, p_bit = 2 * u + n;
          const int r_byte = x16p_pos(u, kk), r_bit = 2 * x16p_pair(u, kk) + n;
          for (int v = 0; v < 256; ++v) {
            if (v >> r_bit & 1) to_packed[r_byte][v] |= uint32_t{1} << (8 * p_byte + p_bit);
            if (v >> p_bit & 1) to_plain[p_byte][v] |= uint32_t{1} << (8 * r_byte + r_bit);
          }
        }
  }
};
constexpr QhTables kQhTables;

template <bool kToPacked>
void permute_x16p(const void* src, void* dst, int64_t n_rows, int64_t k) {
  constexpr int64_t kRows = x16::kRows;
  constexpr size_t kQs = offsetof(BlockQ5K, qs), kQh = offsetof(BlockQ5K, qh);
  const auto* in = static_cast<const uint8_t*>(src);
  auto* out = static_cast<uint8_t*>(dst);
  const int64_t nb = k / kQK_K;
  const size_t row_bytes = static_cast<size_t>(nb) * sizeof(BlockQ5K);
  for (int64_t r0 = 0; r0 + kRows <= n_rows; r0 += kRows)
    for (int64_t b = 0; b < nb; ++b) {
      const size_t group = static_cast<size_t>(r0) * row_bytes + static_cast<size_t>(b) * kRows * sizeof(BlockQ5K);
      for (int64_t j = 0; j < kRows; ++j) {
        const size_t row = static_cast<size_t>(r0 + j) * row_bytes + static_cast<size_t>(b) * sizeof(BlockQ5K);
        const size_t lane = 4 * static_cast<size_t>(j);  // row j's bytes in a 64-byte unit
        auto move = [&](size_t p_off, size_t r_off, size_t n) {
          if constexpr (kToPacked) std::memcpy(out + group + p_off, in + row + r_off, n);
          else std::memcpy(out + row + r_off, in + group + p_off, n);
        };
        // d, dmin, scales: as the x16 layout
        move(2 * static_cast<size_t>(j), offsetof(BlockQ5K, d), 2);
        move(32 + 2 * static_cast<size_t>(j), offsetof(BlockQ5K, dmin), 2);
        for (size_t u = 0; u < 3; ++u) move(64 + 64 * u + lane, offsetof(BlockQ5K, scales) + 4 * u, 4);
        for (size_t L = 0; L < 8; ++L) {
          const size_t blk = 256 + 320 * L + lane;
          // qs: bytes kk, kk + 1 of a unit are 2 adjacent plain bytes (kk = 0, 2)
          for (int u = 0; u < 4; ++u)
            for (int kk = 0; kk < 4; kk += 2)
              move(blk + 64 * (1 + static_cast<size_t>(u)) + static_cast<size_t>(kk),
                   kQs + 32 * static_cast<size_t>(x16p_pair(u, kk)) + 4 * L + static_cast<size_t>(x16p_pos(u, kk)), 2);
          const uint8_t* from = kToPacked ? in + row + kQh + 4 * L : in + group + blk;
          const auto& table = kToPacked ? kQhTables.to_packed : kQhTables.to_plain;
          const uint32_t word = table[0][from[0]] | table[1][from[1]] | table[2][from[2]] | table[3][from[3]];
          std::memcpy(kToPacked ? out + group + blk : out + row + kQh + 4 * L, &word, 4);
        }
      }
    }
}

}  // namespace

void repack_q5_k_x16p(const void* src, void* dst, int64_t n_rows, int64_t k) {
  permute_x16p<true>(src, dst, n_rows, k);
}
void unrepack_q5_k_x16p(const void* src, void* dst, int64_t n_rows, int64_t k) {
  permute_x16p<false>(src, dst, n_rows, k);
}

}  // namespace baton::kernels::scalar
