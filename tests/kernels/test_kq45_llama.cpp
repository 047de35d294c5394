// Q4_K / Q5_K gemms in llama.cpp's AVX2 float orders (kquant/kernels.h): the scalar reference
// against an independent evaluation of each order from plain integer sums, every ISA variant
// of the Q4_K grouped (4-row GEMM) order against the scalar one, and its batch invariance.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "test_kquant_util.h"

using namespace baton;
using namespace baton::test::kq;
using kernels::BlockQ4K;
using kernels::BlockQ5K;
using kernels::BlockQ8K;
using kernels::kQK_K;

namespace {

float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_fp32(h);
}

// Element e's quant of a Q4_K (qh == nullptr) or Q5_K super-block, straight from kquant/blocks.h.
int quant_at(const uint8_t* qs, const uint8_t* qh, int e) {
  const int pair = e / 64, l = e % 32, high = (e % 64) / 32;
  int q = (qs[32 * pair + l] >> (4 * high)) & 0xF;
  if (qh) q += ((qh[l] >> (2 * pair + high)) & 1) << 4;
  return q;
}

// Integer pieces of one weight super-block against one activation block.
struct Pieces {
  int64_t sumi_sub[8] = {};  // per 32-element sub-block: scale * sum q * a
  int64_t summ_sub[8] = {};  // per sub-block: min * (bsums of its two halves)
  int64_t lane[8] = {};      // Q5_K lanes: sum over sub-blocks of scale * products at 4L..4L+3
};

Pieces pieces(const uint8_t* x, const uint8_t* qs, const uint8_t* qh, const BlockQ8K& a) {
  Pieces p;
  const uint8_t* scales = x + offsetof(BlockQ4K, scales);
  for (int j = 0; j < 8; ++j) {
    const auto sm = kernels::unpack_scale_min_k4(j, scales);
    for (int i = 0; i < 32; ++i) {
      const int64_t prod = int64_t{sm.scale} * quant_at(qs, qh, 32 * j + i) * a.qs[32 * j + i];
      p.sumi_sub[j] += prod;
      p.lane[i / 4] += prod;
    }
    p.summ_sub[j] = int64_t{sm.min} * (a.bsums[2 * j] + a.bsums[2 * j + 1]);
  }
  return p;
}

std::vector<BlockQ8K> activations(int64_t nb, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(nb * kQK_K));
  for (auto& v : x) v = dist(gen);
  std::vector<BlockQ8K> a(static_cast<size_t>(nb));
  kernels::scalar::quantize_q8_k(x.data(), a.data(), nb * kQK_K);
  return a;
}

// Random bytes with finite f16 d / dmin.
template <class Block>
std::vector<Block> weights(int64_t nb, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> real(-0.02f, 0.02f);
  std::vector<Block> w(static_cast<size_t>(nb));
  for (auto& b : w) {
    auto* p = reinterpret_cast<uint8_t*>(&b);
    for (size_t i = 0; i < sizeof b; ++i) p[i] = static_cast<uint8_t>(byte(gen));
    const uint16_t d = fp32_to_fp16(real(gen)), dmin = fp32_to_fp16(real(gen));
    std::memcpy(p + offsetof(Block, d), &d, 2);
    std::memcpy(p + offsetof(Block, dmin), &dmin, 2);
  }
  return w;
}

// llama.cpp's q4_K_8x8 orders: steps of `subs_per_step` sub-blocks, two chains.
float q4k_expected(const std::vector<BlockQ4K>& w, const std::vector<BlockQ8K>& a, int subs_per_step) {
  float acc = 0.0f, accm = 0.0f;
  for (size_t b = 0; b < w.size(); ++b) {
    const auto* x = reinterpret_cast<const uint8_t*>(&w[b]);
    const Pieces p = pieces(x, w[b].qs, nullptr, a[b]);
    const float dd = f16_at(x + offsetof(BlockQ4K, d)) * a[b].d;
    const float dm = f16_at(x + offsetof(BlockQ4K, dmin)) * a[b].d;
    for (int j0 = 0; j0 < 8; j0 += subs_per_step) {
      int64_t si = 0, sm = 0;
      for (int j = j0; j < j0 + subs_per_step; ++j) {
        si += p.sumi_sub[j];
        sm += p.summ_sub[j];
      }
      acc = std::fma(static_cast<float>(si), dd, acc);
      accm = std::fma(static_cast<float>(sm), dm, accm);
    }
  }
  return acc - accm;
}

// llama.cpp's AVX2 ggml_vec_dot_q5_K_q8_K.
float q5k_expected(const std::vector<BlockQ5K>& w, const std::vector<BlockQ8K>& a) {
  float lanes[8] = {}, summs = 0.0f;
  for (size_t b = 0; b < w.size(); ++b) {
    const auto* x = reinterpret_cast<const uint8_t*>(&w[b]);
    const Pieces p = pieces(x, w[b].qs, w[b].qh, a[b]);
    const float d = a[b].d * f16_at(x + offsetof(BlockQ5K, d));
    const float dmin = -a[b].d * f16_at(x + offsetof(BlockQ5K, dmin));
    int64_t m = 0;
    for (int64_t v : p.summ_sub) m += v;
    for (int l = 0; l < 8; ++l) lanes[l] = std::fma(d, static_cast<float>(p.lane[l]), lanes[l]);
    summs = std::fma(dmin, static_cast<float>(m), summs);
  }
  const float h0 = lanes[0] + lanes[4], h1 = lanes[1] + lanes[5], h2 = lanes[2] + lanes[6], h3 = lanes[3] + lanes[7];
  return ((h0 + h2) + (h1 + h3)) + summs;
}

struct GroupedVariant {
  const char* name;
  kernels::GemmFn gemm;
};

std::vector<GroupedVariant> grouped_variants() {
  std::vector<GroupedVariant> v{{"scalar", kernels::scalar::gemm_q4_k_grouped}};
  if (cpu_has(kernels::Isa::kAvx2)) v.push_back({"avx2", kernels::avx2::gemm_q4_k_grouped});
  if (cpu_has(kernels::Isa::kAvxVnni)) v.push_back({"avxvnni", kernels::avxvnni::gemm_q4_k_grouped});
  if (cpu_has(kernels::Isa::kAvxVnni)) v.push_back({"avxvnni lanes", kernels::avxvnni::gemm_q4_k_grouped_lanes});
  if (cpu_has(kernels::Isa::kAvx512)) v.push_back({"avx512", kernels::avx512::gemm_q4_k_grouped});
  if (kernels::has_avx512_vnni()) v.push_back({"avx512vnni", kernels::avx512::gemm_q4_k_grouped_vnni});
  return v;
}

}  // namespace

TEST_CASE("Q4_K gemm is llama.cpp's repacked GEMV order, gemm_q4_k_grouped its 4-row GEMM order") {
  for (int64_t nb : {1, 3, 5}) {
    for (uint32_t seed = 1; seed <= 40; ++seed) {
      const auto w = weights<BlockQ4K>(nb, seed);
      const auto a = activations(nb, seed * 7);
      const int64_t k = nb * kQK_K;
      float gemv = 0.0f, grouped = 0.0f;
      kernels::scalar::gemm_q4_k(k, w.data(), sizeof(BlockQ4K) * w.size(), 1, a.data(), 0, 1, &gemv, 1);
      kernels::scalar::gemm_q4_k_grouped(k, w.data(), sizeof(BlockQ4K) * w.size(), 1, a.data(), 0, 1, &grouped, 1);
      INFO("nb=" << nb << " seed=" << seed);
      CHECK(same_bits(gemv, q4k_expected(w, a, 8)));
      CHECK(same_bits(grouped, q4k_expected(w, a, 2)));
    }
  }
}

TEST_CASE("the two Q4_K orders really differ in the last bits on some rows") {
  int differ = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const auto w = weights<BlockQ4K>(3, seed);
    const auto a = activations(3, seed * 7);
    differ += !same_bits(q4k_expected(w, a, 8), q4k_expected(w, a, 2));
  }
  CHECK(differ > 0);
}

TEST_CASE("Q5_K gemm is llama.cpp's AVX2 vec_dot order (8 lanes, hsum, then the min chain)") {
  for (int64_t nb : {1, 2, 4}) {
    for (uint32_t seed = 1; seed <= 40; ++seed) {
      const auto w = weights<BlockQ5K>(nb, seed);
      const auto a = activations(nb, seed * 11);
      float got = 0.0f;
      kernels::scalar::gemm_q5_k(nb * kQK_K, w.data(), sizeof(BlockQ5K) * w.size(), 1, a.data(), 0, 1, &got, 1);
      INFO("nb=" << nb << " seed=" << seed);
      CHECK(same_bits(got, q5k_expected(w, a)));
    }
  }
}

TEST_CASE("every ISA's Q4_K grouped gemm returns the scalar bits and is batch invariant") {
  const int64_t k = 768, n_rows = 21, n_tok = 37;
  std::mt19937 gen(5);
  KType q4k{GgmlType::kQ4_K, sizeof(BlockQ4K), kernels::scalar::quantize_q4_k_ref, {0, 2}, {}};
  Rows w(n_rows, 3 * sizeof(BlockQ4K), 3, 5);
  for (int64_t r = 0; r < n_rows; ++r) fill_random_blocks(q4k, w.row(r), 3, gen, 0.01f);
  Rows a(n_tok, 3 * sizeof(BlockQ8K), 7, 3);
  const auto x = random_normal(static_cast<size_t>(n_tok * k), 17);
  for (int64_t t = 0; t < n_tok; ++t) kernels::scalar::quantize_q8_k(x.data() + t * k, a.row(t), k);
  auto run = [&](kernels::GemmFn g, int64_t r0, int64_t nr, int64_t t0, int64_t nt) {
    std::vector<float> out(static_cast<size_t>(nr * nt), std::nanf(""));
    g(k, w.row(r0), w.stride(), nr, a.row(t0), a.stride(), nt, out.data(), static_cast<size_t>(nr));
    return out;
  };
  const auto ref = run(kernels::scalar::gemm_q4_k_grouped, 0, n_rows, 0, n_tok);
  for (const auto& v : grouped_variants()) {
    INFO(v.name);
    int64_t mismatches = 0;
    const auto full = run(v.gemm, 0, n_rows, 0, n_tok);
    for (size_t i = 0; i < ref.size(); ++i) mismatches += !same_bits(ref[i], full[i]);
    for (int64_t t = 0; t < n_tok; t += 2)
      for (int64_t r = 0; r < n_rows; r += 3) mismatches += !same_bits(run(v.gemm, r, 1, t, 1)[0], ref[t * n_rows + r]);
    const int64_t boxes[][4] = {{3, 9, 1, 4},   {0, 21, 5, 8},  {10, 11, 0, 2},
                                {19, 2, 12, 1}, {1, 17, 3, 33}, {0, 21, 16, 20}};
    for (const auto& bx : boxes) {
      const auto part = run(v.gemm, bx[0], bx[1], bx[2], bx[3]);
      for (int64_t t = 0; t < bx[3]; ++t)
        for (int64_t r = 0; r < bx[1]; ++r)
          mismatches += !same_bits(part[t * bx[1] + r], ref[(bx[2] + t) * n_rows + bx[0] + r]);
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("the type table serves Q4_K with a grouped gemm and Q5_K without") {
  for (auto isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2, kernels::Isa::kAvxVnni, kernels::Isa::kAvx512}) {
    if (!cpu_has(isa)) continue;
    const auto* q4 = kernels::find_type_ops(GgmlType::kQ4_K, isa);
    const auto* q5 = kernels::find_type_ops(GgmlType::kQ5_K, isa);
    REQUIRE(q4);
    REQUIRE(q5);
    CHECK(q4->gemm_grouped != nullptr);
    CHECK(q5->gemm_grouped == nullptr);
  }
}
