// Legacy-quant gemms: the scalar reference against the dequantized dot product and against
// llama.cpp's x86 summation order, every SIMD variant (AVX-512 with and without VNNI) bitwise
// equal to the scalar reference over awkward shapes,
// and batch invariance (every element bitwise equal to its 1x1 call, whatever the tile).
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "engine/base/fp16.h"
#include "kernels/block32/kernels.h"
#include "legacy_test_util.h"

using namespace baton;
using namespace baton::test;
using kernels::Isa;

namespace {

const GgmlType kWeightTypes[] = {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ8_0};

struct Variant {
  std::string name;
  kernels::GemmFn gemm;
};

// Every gemm this CPU can run for `type`: the registered one per ISA, plus AVX-512 without
// VNNI when the registry picked the VNNI one (so both are tested on a VNNI machine).
std::vector<Variant> variants(GgmlType type) {
  std::vector<Variant> v;
  for (Isa isa : available_isas()) v.push_back({std::string(kernels::isa_name(isa)), ops_for(type, isa).gemm});
  if (kernels::detected_isa() == Isa::kAvx512) {
    namespace k5 = kernels::avx512;
    const std::pair<GgmlType, std::pair<kernels::GemmFn, kernels::GemmFn>> all[] = {
        {GgmlType::kQ4_0, {k5::gemm_q4_0, k5::gemm_q4_0_vnni}},
        {GgmlType::kQ4_1, {k5::gemm_q4_1, k5::gemm_q4_1_vnni}},
        {GgmlType::kQ5_0, {k5::gemm_q5_0, k5::gemm_q5_0_vnni}},
        {GgmlType::kQ5_1, {k5::gemm_q5_1, k5::gemm_q5_1_vnni}},
        {GgmlType::kQ8_0, {k5::gemm_q8_0, k5::gemm_q8_0_vnni}}};
    for (const auto& [t, fns] : all) {
      if (t != type) continue;
      v.push_back({"avx512 (no vnni)", fns.first});
      if (kernels::has_avx512_vnni()) v.push_back({"avx512 vnni", fns.second});
    }
  }
  return v;
}

struct Problem {
  Problem(GgmlType type, int64_t n_rows, int64_t n_tok, int64_t k, uint32_t seed)
      : type(type),
        act_type(ops_for(type, Isa::kScalar).vec_dot_type),
        k(k),
        w(type, ops_for(type, Isa::kScalar), random_normal(n_rows * k, seed), n_rows, k, 5, 3),
        a(act_type, ops_for(act_type, Isa::kScalar), random_normal(n_tok * k, seed + 1), n_tok, k, 3, 1) {}
  GgmlType type, act_type;
  int64_t k;
  Matrix w, a;

  std::vector<float> run(kernels::GemmFn gemm, int64_t r0, int64_t nr, int64_t t0, int64_t nt) {
    std::vector<float> out(nr * nt, -1.0f);
    gemm(k, w.row(r0), w.stride, nr, a.row(t0), a.stride, nt, out.data(), nr);
    return out;
  }
  // sum |w_i a_i| over the dequantized values, plus the |m * s| terms of Q4_1/Q5_1, and
  // the exact (double) dot product of the dequantized rows.
  void magnitude(int64_t r, int64_t t, double& scale, double& dot, double& s_slack) {
    std::vector<float> wf(k), af(k);
    ops_for(type, Isa::kScalar).to_float(w.row(r), wf.data(), k);
    ops_for(act_type, Isa::kScalar).to_float(a.row(t), af.data(), k);
    scale = dot = s_slack = 0;
    for (int64_t i = 0; i < k; ++i) {
      scale += std::fabs(double(wf[i]) * af[i]);
      dot += double(wf[i]) * af[i];
    }
    if (act_type == GgmlType::kQ8_1) {  // the kernels use s = f16(d * sum q): 2^-11 relative
      for (int64_t b = 0; b < k / 32; ++b) {
        uint16_t m, s;
        std::memcpy(&m, w.row(r) + b * require_ggml_type(type).block_bytes + 2, 2);
        std::memcpy(&s, a.row(t) + b * 36 + 2, 2);
        s_slack += std::fabs(double(fp16_to_fp32(m)) * fp16_to_fp32(s)) * 0x1p-10;
        scale += std::fabs(double(fp16_to_fp32(m)) * fp16_to_fp32(s));
      }
    }
  }
};

}  // namespace

TEST_CASE("scalar legacy gemm equals the dot product of the dequantized rows") {
  for (GgmlType type : kWeightTypes) {
    Problem p(type, 3, 2, 32 * 37, 100);
    const auto out = p.run(ops_for(type, Isa::kScalar).gemm, 0, 3, 0, 2);
    for (int64_t t = 0; t < 2; ++t) {
      for (int64_t r = 0; r < 3; ++r) {
        double scale, dot, s_slack;
        p.magnitude(r, t, scale, dot, s_slack);
        INFO(ggml_type_name(type) << " r=" << r << " t=" << t << " got " << out[t * 3 + r] << " want " << dot);
        CHECK(std::fabs(out[t * 3 + r] - dot) <= 1e-5 * scale + s_slack);
      }
    }
  }
}

TEST_CASE("legacy gemm equals the scalar reference bitwise on every ISA over awkward shapes") {
  const int64_t n_rows = 13, n_tok = 9;
  for (GgmlType type : kWeightTypes) {
    for (int64_t nb : {1, 2, 3, 4, 5, 7, 8, 13, 128}) {
      const int64_t k = nb * 32;
      Problem p(type, n_rows, n_tok, k, static_cast<uint32_t>(nb));
      std::vector<double> scale(n_rows * n_tok), slack(n_rows * n_tok);
      for (int64_t t = 0; t < n_tok; ++t)
        for (int64_t r = 0; r < n_rows; ++r) {
          double dot;
          p.magnitude(r, t, scale[t * n_rows + r], dot, slack[t * n_rows + r]);
        }
      for (const auto& v : variants(type)) {
        for (int64_t nr : {int64_t{1}, int64_t{4}, int64_t{9}, n_rows}) {
          for (int64_t nt = 1; nt <= n_tok; ++nt) {
            const auto ref = p.run(ops_for(type, Isa::kScalar).gemm, 0, nr, 0, nt);
            const auto got = p.run(v.gemm, 0, nr, 0, nt);
            for (int64_t t = 0; t < nt; ++t) {
              for (int64_t r = 0; r < nr; ++r) {
                const float x = got[t * nr + r], y = ref[t * nr + r];
                INFO(ggml_type_name(type) << " " << v.name << " k=" << k << " rows=" << nr << " toks=" << nt
                                          << " r=" << r << " t=" << t << " got " << x << " ref " << y);
                REQUIRE(std::fabs(double(x) - y) <= 1e-5 * scale[t * n_rows + r]);
                REQUIRE(same_bits(x, y));  // llama.cpp's order is defined exactly by the scalar
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("legacy gemm is batch invariant: every element equals its 1x1 call bitwise") {
  const int64_t n_rows = 21, n_tok = 11;
  for (GgmlType type : kWeightTypes) {
    for (int64_t nb : {3, 9}) {
      Problem p(type, n_rows, n_tok, nb * 32, 7);
      std::vector<float> first;  // AVX-512 with and without VNNI must agree bitwise
      for (const auto& v : variants(type)) {
        const auto full = p.run(v.gemm, 0, n_rows, 0, n_tok);
        for (int64_t t = 0; t < n_tok; ++t) {
          for (int64_t r = 0; r < n_rows; ++r) {
            const float one = p.run(v.gemm, r, 1, t, 1)[0];
            INFO(ggml_type_name(type) << " " << v.name << " nb=" << nb << " r=" << r << " t=" << t);
            REQUIRE(same_bits(one, full[t * n_rows + r]));
          }
        }
        const auto sub = p.run(v.gemm, 3, 7, 2, 5);
        for (int64_t t = 0; t < 5; ++t)
          for (int64_t r = 0; r < 7; ++r) REQUIRE(same_bits(sub[t * 7 + r], full[(t + 2) * n_rows + r + 3]));
        const auto decode = p.run(v.gemm, 0, n_rows, 4, 1);  // the n_tok == 1 tiles
        for (int64_t r = 0; r < n_rows; ++r) REQUIRE(same_bits(decode[r], full[4 * n_rows + r]));
        if (v.name.rfind("avx512", 0) == 0) {
          if (first.empty()) first = full;
          INFO(ggml_type_name(type) << " " << v.name << " vs the other AVX-512 variant");
          REQUIRE(std::memcmp(first.data(), full.data(), full.size() * 4) == 0);
        }
      }
    }
  }
}

// Q4_0 runs 16-row (AVX-512) and 8-row groups with the rest by the generic tile; the other
// formats 4- or 2-row tiles. Row counts crossing every group boundary, at an odd first row.
TEST_CASE("legacy gemm equals the scalar reference bitwise across row groups of 16 and 8") {
  const int64_t n_rows = 16 * 2 + 8 + 5, n_tok = 6;
  for (GgmlType type : kWeightTypes) {
    for (int64_t nb : {1, 6, 33}) {
      Problem p(type, n_rows + 1, n_tok, nb * 32, static_cast<uint32_t>(40 + nb));
      for (const auto& v : variants(type)) {
        for (int64_t nr : {int64_t{8}, int64_t{16}, int64_t{24}, int64_t{31}, n_rows}) {
          for (int64_t nt : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{5}, n_tok}) {
            const auto ref = p.run(ops_for(type, Isa::kScalar).gemm, 1, nr, 0, nt);
            const auto got = p.run(v.gemm, 1, nr, 0, nt);
            for (size_t j = 0; j < ref.size(); ++j) {
              INFO(ggml_type_name(type) << " " << v.name << " nb=" << nb << " rows=" << nr << " toks=" << nt
                                        << " r=" << j % nr << " t=" << j / nr);
              REQUIRE(same_bits(got[j], ref[j]));
            }
          }
        }
      }
    }
  }
}

// The block32 formats of the downloaded files (Q4_0, Q8_0) in batches of every size the tiles
// split differently (1..26 tokens: 4-token tiles and their 1..3 tails; the AVX-VNNI tier's
// Q8_0 offset form and Q4_0 row groups), at an odd first row, with row tails of 1..3.
TEST_CASE("Q4_0 and Q8_0 batches of 1 to 26 tokens equal the scalar reference bitwise on every ISA") {
  const int64_t n_rows = 19, n_tok = 26;
  for (GgmlType type : {GgmlType::kQ4_0, GgmlType::kQ8_0}) {
    for (int64_t nb : {1, 5, 64}) {
      Problem p(type, n_rows + 1, n_tok + 1, nb * 32, static_cast<uint32_t>(70 + nb));
      for (const auto& v : variants(type)) {
        for (int64_t nr : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{17}, n_rows}) {
          for (int64_t nt = 1; nt <= n_tok; ++nt) {
            const auto ref = p.run(ops_for(type, Isa::kScalar).gemm, 1, nr, 1, nt);
            const auto got = p.run(v.gemm, 1, nr, 1, nt);
            for (size_t j = 0; j < ref.size(); ++j) {
              INFO(ggml_type_name(type) << " " << v.name << " nb=" << nb << " rows=" << nr << " toks=" << nt
                                        << " r=" << j % nr << " t=" << j / nr);
              REQUIRE(same_bits(got[j], ref[j]));
            }
          }
        }
      }
    }
  }
}
