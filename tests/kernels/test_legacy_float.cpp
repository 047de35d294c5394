// F32 / F16 / BF16 kernels: conversions bit-identical across ISAs, gemm within float rounding
// of the scalar reference, and batch invariance (every element equal to its 1x1 call).
#include <catch2/catch.hpp>

#include <cmath>

#include "engine/base/fp16.h"
#include "legacy_test_util.h"

using namespace baton;
using namespace baton::test;
using kernels::Isa;

namespace {

std::vector<uint16_t> all_u16() {
  std::vector<uint16_t> v(65536);
  for (uint32_t i = 0; i < 65536; ++i) v[i] = static_cast<uint16_t>(i);
  return v;
}

// Random bit patterns plus the interesting ones: zeros, infinities, NaNs, denormals of both
// formats, halfway cases of f16 and bf16 rounding, values overflowing f16.
std::vector<float> awkward_floats() {
  std::vector<uint32_t> bits = {0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001,
                                0x7f800001, 0x00000001, 0x807fffff, 0x33800000, 0x33000000, 0x38800000,
                                0x387fe000, 0x477fe000, 0x477ff000, 0x477fefff, 0x47800000, 0x3f801000,
                                0x3f803000, 0x3f808000, 0x3f818000, 0x7f7fffff, 0xff7f8000, 0x7f7f8000};
  std::mt19937 gen(7);
  for (int i = 0; i < 200000; ++i) bits.push_back(gen());
  for (int i = 0; i < 20000; ++i) bits.push_back((gen() & 0x8fffffffu) | 0x30000000u);  // f16 range
  std::vector<float> v(bits.size());
  std::memcpy(v.data(), bits.data(), bits.size() * 4);
  return v;
}

}  // namespace

TEST_CASE("F16 and BF16 widen to f32 bit-identically on every ISA for all 65536 patterns") {
  const auto src = all_u16();
  for (GgmlType type : {GgmlType::kF16, GgmlType::kBF16}) {
    std::vector<float> ref(src.size());
    ops_for(type, Isa::kScalar).to_float(src.data(), ref.data(), 65536);
    // spot checks of the reference itself
    CHECK(ref[0x3c00] == (type == GgmlType::kF16 ? 1.0f : 0x1p-7f));
    CHECK(ref[0xc000] == -2.0f);
    for (Isa isa : available_isas()) {
      for (int64_t n : {int64_t{65536}, int64_t{65535 - 8}}) {  // also a masked tail
        std::vector<float> got(src.size() + 1, 7.0f);
        ops_for(type, isa).to_float(src.data(), got.data(), n);
        INFO(ggml_type_name(type) << " on " << kernels::isa_name(isa) << " n=" << n);
        CHECK(std::memcmp(got.data(), ref.data(), n * 4) == 0);
        CHECK(got[n] == 7.0f);  // nothing written past n
      }
    }
  }
}

TEST_CASE("f32 narrows to F16 and BF16 bit-identically on every ISA, NaN and denormals included") {
  const auto src = awkward_floats();
  for (GgmlType type : {GgmlType::kF16, GgmlType::kBF16}) {
    std::vector<uint16_t> ref(src.size());
    ops_for(type, Isa::kScalar).from_float(src.data(), ref.data(), src.size());
    for (Isa isa : available_isas()) {
      for (size_t n : {src.size(), src.size() - 5}) {
        std::vector<uint16_t> got(src.size(), 0xABCD);
        ops_for(type, isa).from_float(src.data(), got.data(), n);
        INFO(ggml_type_name(type) << " on " << kernels::isa_name(isa) << " n=" << n);
        size_t mismatches = 0;
        for (size_t i = 0; i < n; ++i) mismatches += got[i] != ref[i];
        CHECK(mismatches == 0);
        if (n < src.size()) CHECK(got[n] == 0xABCD);
      }
    }
  }
  // f16 rounding: 1 + 2^-11 is a tie -> even (1.0); 1 + 3*2^-11 -> up; 65520 overflows to inf.
  const float x[4] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65520.0f, -0.0f};
  uint16_t h[4];
  ops_for(GgmlType::kF16, kernels::detected_isa()).from_float(x, h, 4);
  CHECK(h[0] == 0x3c00);
  CHECK(h[1] == 0x3c02);
  CHECK(h[2] == 0x7c00);
  CHECK(h[3] == 0x8000);
}

TEST_CASE("float gemm gives the hand-computed dot products") {
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    for (Isa isa : available_isas()) {
      const auto& ops = ops_for(type, isa);
      // w rows {1,2,3}, {-1,0.5,4}; a = {4,5,6}: dots 32 and 22.5 (all exact in bf16 too)
      const std::vector<float> wv = {1, 2, 3, -1, 0.5f, 4}, av = {4, 5, 6};
      Matrix w(type, ops, wv, 2, 3, 0, 1), a(type, ops, av, 1, 3, 0, 3);
      const auto out = run_gemm(ops, 3, w, 2, a, 1);
      INFO(ggml_type_name(type) << " on " << kernels::isa_name(isa));
      CHECK(out[0] == 32.0f);
      CHECK(out[1] == 22.5f);
    }
  }
}

TEST_CASE("float gemm agrees with the scalar reference on every ISA over awkward shapes") {
  const int64_t n_rows = 13, n_tok = 9;
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    const auto& ref_ops = ops_for(type, Isa::kScalar);
    for (int64_t k : {1, 7, 15, 16, 17, 33, 64, 100, 259}) {
      const auto wv = random_normal(n_rows * k, 11 + k), av = random_normal(n_tok * k, 5 + k);
      Matrix w(type, ref_ops, wv, n_rows, k, 6, 2), a(type, ref_ops, av, n_tok, k, 2, 6);
      // magnitude scale of each dot: sum |w_i a_i| of the stored values
      std::vector<float> wf(k), af(k);
      for (Isa isa : available_isas()) {
        const auto& ops = ops_for(type, isa);
        for (int64_t nr : {int64_t{1}, int64_t{5}, n_rows}) {
          for (int64_t nt = 1; nt <= n_tok; ++nt) {
            const auto ref = run_gemm(ref_ops, k, w, nr, a, nt);
            const auto got = run_gemm(ops, k, w, nr, a, nt);
            for (int64_t t = 0; t < nt; ++t) {
              ref_ops.to_float(a.row(t), af.data(), k);
              for (int64_t r = 0; r < nr; ++r) {
                ref_ops.to_float(w.row(r), wf.data(), k);
                double scale = 0;
                for (int64_t i = 0; i < k; ++i) scale += std::fabs(double(wf[i]) * af[i]);
                const float x = got[t * nr + r], y = ref[t * nr + r];
                INFO(ggml_type_name(type) << " " << kernels::isa_name(isa) << " k=" << k << " rows=" << nr << " toks="
                                          << nt << " r=" << r << " t=" << t << " got " << x << " ref " << y);
                REQUIRE(std::fabs(double(x) - y) <= 1e-5 * scale + 1e-30);
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("float gemm is batch invariant: every element equals its 1x1 call bitwise") {
  const int64_t n_rows = 19, n_tok = 11, k = 77;
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    const auto& ref_ops = ops_for(type, Isa::kScalar);
    const auto wv = random_normal(n_rows * k, 3), av = random_normal(n_tok * k, 4);
    Matrix w(type, ref_ops, wv, n_rows, k, 2, 6), a(type, ref_ops, av, n_tok, k, 0, 2);
    for (Isa isa : available_isas()) {
      const auto& ops = ops_for(type, isa);
      const auto full = run_gemm(ops, k, w, n_rows, a, n_tok);
      for (int64_t t = 0; t < n_tok; ++t) {
        for (int64_t r = 0; r < n_rows; ++r) {
          float one = 0;
          ops.gemm(k, w.row(r), w.stride, 1, a.row(t), a.stride, 1, &one, 1);
          INFO(ggml_type_name(type) << " " << kernels::isa_name(isa) << " r=" << r << " t=" << t);
          REQUIRE(same_bits(one, full[t * n_rows + r]));
        }
      }
      // an inner sub-block whose tiles start at other rows and tokens
      std::vector<float> sub(7 * 5);
      ops.gemm(k, w.row(3), w.stride, 7, a.row(2), a.stride, 5, sub.data(), 7);
      for (int64_t t = 0; t < 5; ++t)
        for (int64_t r = 0; r < 7; ++r) REQUIRE(same_bits(sub[t * 7 + r], full[(t + 2) * n_rows + r + 3]));
    }
  }
}
