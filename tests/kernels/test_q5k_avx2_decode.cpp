// The AVX2 Q5_K decode kernel (kquant/q45_K_gemm_rowdot.h: 4-row tiles, the fifth bit decoded with a factor
// of 2 and halved at the end) against the scalar gemm, bit for bit: every tail of a 4-row tile
// (1..9 rows), one and several super-blocks, and the blocks at the limits of its integer bounds
// (every quant 31, every scale and min 63, activations +-127: vpmaddubsw pair sums 2 * 62 * 127).
// The AVX-VNNI tier's copy of it (vpdpwssd for vpmaddwd + add) too.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "kernels/kquant/kernels.h"
#include "test_kquant_util.h"

namespace {

using namespace baton::test::kq;
namespace kernels = baton::kernels;

// n_rows Q5_K rows of k elements: random bytes, or (extreme) all quant bits set, scales/mins 63.
std::vector<uint8_t> q5k_rows(int64_t n_rows, int64_t k, bool extreme, uint32_t seed) {
  const size_t n_blocks = static_cast<size_t>(n_rows * k / kernels::kQK_K);
  std::vector<uint8_t> w(n_blocks * sizeof(kernels::BlockQ5K));
  std::mt19937 gen(seed);
  for (auto& b : w) b = static_cast<uint8_t>(gen());
  for (size_t i = 0; i < n_blocks; ++i) {
    kernels::BlockQ5K blk;
    std::memcpy(&blk, w.data() + i * sizeof blk, sizeof blk);
    blk.d = 0x2E66;     // f16 0.1: finite scales, so a wrong lane shows as a wrong value
    blk.dmin = 0x1E66;  // f16 ~0.0062
    if (extreme) {
      std::memset(blk.scales, 0xFF, sizeof blk.scales);  // every 6-bit scale and min = 63
      std::memset(blk.qh, 0xFF, sizeof blk.qh);
      std::memset(blk.qs, 0xFF, sizeof blk.qs);  // every quant = 31
    }
    std::memcpy(w.data() + i * sizeof blk, &blk, sizeof blk);
  }
  return w;
}

}  // namespace

TEST_CASE("AVX2 Q5_K decode equals the scalar gemm bit for bit on every tile tail and at the integer bounds") {
  if (!cpu_has(kernels::Isa::kAvx2)) return;
  for (const int64_t k : {int64_t{256}, int64_t{2048}}) {
    // Activations: normal values, and +-127 everywhere (every element of a block at the maximum).
    auto normal = random_normal(static_cast<size_t>(k), 17);
    std::vector<float> edge(static_cast<size_t>(k));
    for (int64_t i = 0; i < k; ++i) edge[static_cast<size_t>(i)] = i % 3 ? 1.0f : -1.0f;
    for (const auto* af : {&normal, &edge}) {
      std::vector<uint8_t> a(static_cast<size_t>(k / kernels::kQK_K) * sizeof(kernels::BlockQ8K));
      kernels::scalar::quantize_q8_k(af->data(), a.data(), k);
      for (bool extreme : {false, true}) {
        for (int64_t n_rows = 1; n_rows <= 9; ++n_rows) {
          INFO("k " << k << " rows " << n_rows << (extreme ? " extreme" : " random")
                    << (af == &edge ? " +-127 activations" : " normal activations"));
          const auto w = q5k_rows(n_rows, k, extreme, static_cast<uint32_t>(n_rows));
          const size_t row_bytes = static_cast<size_t>(k / kernels::kQK_K) * sizeof(kernels::BlockQ5K);
          std::vector<float> want(static_cast<size_t>(n_rows)), got(static_cast<size_t>(n_rows), -1.0f);
          kernels::scalar::gemm_q5_k(k, w.data(), row_bytes, n_rows, a.data(), a.size(), 1, want.data(), 0);
          for (auto* gemm : {kernels::avx2::gemm_q5_k, kernels::avxvnni::gemm_q5_k}) {
            if (gemm == kernels::avxvnni::gemm_q5_k && !cpu_has(kernels::Isa::kAvxVnni)) continue;
            kernels::GemmFn fn = gemm;
            fn(k, w.data(), row_bytes, n_rows, a.data(), a.size(), 1, got.data(), 0);
            int64_t mismatches = 0;
            for (int64_t r = 0; r < n_rows; ++r)
              mismatches += !same_bits(got[static_cast<size_t>(r)], want[static_cast<size_t>(r)]);
            CHECK(mismatches == 0);
          }
        }
      }
    }
  }
}
