// The AVX-VNNI tier's token-parallel prompt kernels (q4_K_lanes_avxvnni.cpp) against the scalar
// reference, bit for bit: every token count 1..N (the 8-token lanes' tails, the switch from the
// row kernels), odd row counts (the 4-row groups' tails), and row chunks of one matmul that
// reuse the transposed activations (detail::PreparedActivations).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/core/scratch.h"
#include "test_kquant_util.h"

using namespace baton::test::kq;
using namespace baton;

namespace {

struct VnniLanesCase {
  const char* name;
  kernels::GemmFn reference, lanes;
};

std::vector<VnniLanesCase> vnni_lanes_cases() {
  return {{"Q4_K", kernels::scalar::gemm_q4_k, kernels::avxvnni::gemm_q4_k_lanes},
          {"Q4_K grouped", kernels::scalar::gemm_q4_k_grouped, kernels::avxvnni::gemm_q4_k_grouped_lanes}};
}

// n_rows Q4_K rows of k elements (random bytes with sane f16 scales) in unaligned storage.
Rows vnni_lanes_weights(int64_t n_rows, int64_t k, uint32_t seed) {
  KType q4k{baton::GgmlType::kQ4_K, sizeof(kernels::BlockQ4K), kernels::scalar::quantize_q4_k_ref, {0, 2}, {}};
  std::mt19937 gen(seed);
  Rows w(n_rows, static_cast<size_t>(k / kernels::kQK_K) * sizeof(kernels::BlockQ4K), 3, 5);
  for (int64_t r = 0; r < n_rows; ++r) fill_random_blocks(q4k, w.row(r), k / kernels::kQK_K, gen, 0.01f);
  return w;
}

Rows vnni_lanes_acts(int64_t n_tok, int64_t k, uint32_t seed) {
  Rows a(n_tok, static_cast<size_t>(k / kernels::kQK_K) * sizeof(kernels::BlockQ8K), 7, 3);
  const auto x = random_normal(static_cast<size_t>(n_tok * k), seed);
  for (int64_t t = 0; t < n_tok; ++t) kernels::scalar::quantize_q8_k(x.data() + t * k, a.row(t), k);
  return a;
}

std::vector<float> vnni_lanes_run(kernels::GemmFn g, int64_t k, Rows& w, int64_t r0, int64_t nr, Rows& a, int64_t nt) {
  std::vector<float> out(static_cast<size_t>(nr * nt), std::nanf(""));
  g(k, w.row(r0), w.stride(), nr, a.row(0), a.stride(), nt, out.data(), static_cast<size_t>(nr));
  return out;
}

}  // namespace

TEST_CASE("the AVX-VNNI token-lane Q4_K gemms return the scalar bits for every token count and row tail") {
  if (!cpu_has(kernels::Isa::kAvxVnni)) {
    WARN("no AVX-VNNI on this CPU: nothing to check");
    return;
  }
  for (const auto& c : vnni_lanes_cases()) {
    for (const int64_t k : {int64_t{256}, int64_t{768}}) {
      for (const int64_t n_rows : {int64_t{1}, int64_t{3}, int64_t{4}, int64_t{9}, int64_t{14}}) {
        Rows w = vnni_lanes_weights(n_rows, k, static_cast<uint32_t>(k + n_rows));
        for (int64_t n_tok = 1; n_tok <= 26; ++n_tok) {
          Rows a = vnni_lanes_acts(n_tok, k, static_cast<uint32_t>(n_tok * 13 + k));
          const auto ref = vnni_lanes_run(c.reference, k, w, 0, n_rows, a, n_tok);
          const auto got = vnni_lanes_run(c.lanes, k, w, 0, n_rows, a, n_tok);
          int64_t mismatches = 0;
          for (size_t i = 0; i < ref.size(); ++i) mismatches += !same_bits(ref[i], got[i]);
          INFO(c.name << " k=" << k << " rows=" << n_rows << " tok=" << n_tok);
          CHECK(mismatches == 0);
        }
      }
    }
  }
}

TEST_CASE("the AVX-VNNI token-lane Q4_K gemms reuse a matmul's activations across its row chunks") {
  if (!cpu_has(kernels::Isa::kAvxVnni)) {
    WARN("no AVX-VNNI on this CPU: nothing to check");
    return;
  }
  const int64_t k = 512, n_rows = 40, n_tok = 19;
  Rows w = vnni_lanes_weights(n_rows, k, 3);
  Rows a = vnni_lanes_acts(n_tok, k, 4);
  Rows other = vnni_lanes_acts(n_tok, k, 5);
  for (const auto& c : vnni_lanes_cases()) {
    const auto ref = vnni_lanes_run(c.reference, k, w, 0, n_rows, a, n_tok);
    const auto ref_other = vnni_lanes_run(c.reference, k, w, 0, n_rows, other, n_tok);
    int64_t mismatches = 0;
    {
      const kernels::detail::MatmulScope scope(1000 + (c.lanes == kernels::avxvnni::gemm_q4_k_lanes ? 1 : 2));
      for (int64_t r0 = 0; r0 < n_rows; r0 += 12) {  // chunks of 12 rows, the last one 4
        const int64_t nr = std::min<int64_t>(12, n_rows - r0);
        const auto part = vnni_lanes_run(c.lanes, k, w, r0, nr, a, n_tok);
        for (int64_t t = 0; t < n_tok; ++t)
          for (int64_t r = 0; r < nr; ++r) mismatches += !same_bits(part[t * nr + r], ref[t * n_rows + r0 + r]);
      }
      // other activations in the same matmul: prepared afresh, not the cached ones
      const auto got_other = vnni_lanes_run(c.lanes, k, w, 0, n_rows, other, n_tok);
      for (size_t i = 0; i < ref_other.size(); ++i) mismatches += !same_bits(ref_other[i], got_other[i]);
    }
    INFO(c.name);
    CHECK(mismatches == 0);
  }
}
