// Legacy block formats: activation and weight quantizers (bytes by hand, llama.cpp's rules),
// dequantization bit-identical across ISAs, and quantize -> dequantize error bounds.
#include <catch2/catch.hpp>

#include <cmath>

#include "engine/base/fp16.h"
#include "kernels/block32/blocks.h"
#include "kernels/block32/kernels.h"
#include "legacy_test_util.h"

using namespace baton;
using namespace baton::test;
using kernels::Isa;

namespace {

const GgmlType kLegacy[] = {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0,
                            GgmlType::kQ5_1, GgmlType::kQ8_0, GgmlType::kQ8_1};

// Blocks of different magnitudes, an all-zero block, denormal-sized and huge values.
std::vector<float> awkward_rows(int64_t n_blocks, uint32_t seed) {
  auto v = random_normal(n_blocks * 32, seed);
  std::mt19937 gen(seed);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float scale = std::ldexp(1.0f, static_cast<int>(gen() % 40) - 20);
    for (int j = 0; j < 32; ++j) v[b * 32 + j] *= scale;
  }
  if (n_blocks > 3) {
    for (int j = 0; j < 32; ++j) v[32 + j] = 0.0f;
    for (int j = 0; j < 32; ++j) v[64 + j] *= 1e-40f;
    for (int j = 0; j < 32; ++j) v[96 + j] *= 1e30f;
  }
  return v;
}

}  // namespace

TEST_CASE("block structs have ggml's sizes and vec_dot types are llama.cpp's") {
  for (GgmlType type : kLegacy) {
    INFO(ggml_type_name(type));
    CHECK(require_ggml_type(type).block_size == 32);
  }
  CHECK(require_ggml_type(GgmlType::kQ4_0).block_bytes == sizeof(kernels::BlockQ4_0));
  CHECK(require_ggml_type(GgmlType::kQ4_1).block_bytes == sizeof(kernels::BlockQ4_1));
  CHECK(require_ggml_type(GgmlType::kQ5_0).block_bytes == sizeof(kernels::BlockQ5_0));
  CHECK(require_ggml_type(GgmlType::kQ5_1).block_bytes == sizeof(kernels::BlockQ5_1));
  CHECK(require_ggml_type(GgmlType::kQ8_0).block_bytes == sizeof(kernels::BlockQ8_0));
  CHECK(require_ggml_type(GgmlType::kQ8_1).block_bytes == sizeof(kernels::BlockQ8_1));
  for (Isa isa : available_isas()) {
    CHECK(ops_for(GgmlType::kQ4_0, isa).vec_dot_type == GgmlType::kQ8_0);
    CHECK(ops_for(GgmlType::kQ5_0, isa).vec_dot_type == GgmlType::kQ8_0);
    CHECK(ops_for(GgmlType::kQ8_0, isa).vec_dot_type == GgmlType::kQ8_0);
    CHECK(ops_for(GgmlType::kQ4_1, isa).vec_dot_type == GgmlType::kQ8_1);
    CHECK(ops_for(GgmlType::kQ5_1, isa).vec_dot_type == GgmlType::kQ8_1);
    CHECK(ops_for(GgmlType::kF32, isa).vec_dot_type == GgmlType::kF32);
    CHECK(ops_for(GgmlType::kF16, isa).vec_dot_type == GgmlType::kF16);
    CHECK(ops_for(GgmlType::kBF16, isa).vec_dot_type == GgmlType::kBF16);
    CHECK(ops_for(GgmlType::kQ8_1, isa).gemm == nullptr);
  }
}

TEST_CASE("activation quantization uses d = amax/127 and rounds half to even, as llama.cpp on x86") {
  // amax 254: d = 2 (f16 0x4000), x * (127/254) = x/2, so 1, 3, 5 land exactly on .5 ties.
  std::vector<float> x(64, 0.0f);
  const float in[] = {254, -254, 1, 3, 5, -3, -1, 0.9f, 100, -101};  // -50.5 -> -50
  const int8_t want[] = {127, -127, 0, 2, 2, -2, 0, 0, 50, -50};
  std::copy(std::begin(in), std::end(in), x.begin());  // second block stays all zero
  for (Isa isa : available_isas()) {
    INFO(kernels::isa_name(isa));
    kernels::BlockQ8_0 q0[2];
    kernels::BlockQ8_1 q1[2];
    ops_for(GgmlType::kQ8_0, isa).from_float(x.data(), q0, 64);
    ops_for(GgmlType::kQ8_1, isa).from_float(x.data(), q1, 64);
    CHECK(q0[0].d == 0x4000);
    CHECK(q1[0].d == 0x4000);
    CHECK(q1[0].s == 0x4400);  // d * sum(q) = 2 * 2 = 4
    for (int j = 0; j < 32; ++j) {
      const int8_t w = j < 10 ? want[j] : 0;
      CHECK(q0[0].qs[j] == w);
      CHECK(q1[0].qs[j] == w);
    }
    CHECK(q0[1].d == 0);
    CHECK(q1[1].d == 0);
    CHECK(q1[1].s == 0);
    for (int j = 0; j < 32; ++j) CHECK((q0[1].qs[j] == 0 && q1[1].qs[j] == 0));
  }
  // llama-quantize's reference rounds ties away from zero instead (roundf)
  kernels::BlockQ8_0 r[2];
  kernels::scalar::quantize_q8_0_ref(x.data(), r, 64);
  CHECK(r[0].qs[2] == 1);
  CHECK(r[0].qs[3] == 2);
  CHECK(r[0].qs[4] == 3);
}

TEST_CASE("activation quantizers give the same bytes on every ISA") {
  const int64_t nb = 257;
  const auto x = awkward_rows(nb, 42);
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ8_1}) {
    const size_t bytes = row_bytes(type, nb * 32);
    std::vector<uint8_t> ref(bytes), got(bytes);
    ops_for(type, Isa::kScalar).from_float(x.data(), ref.data(), nb * 32);
    for (Isa isa : available_isas()) {
      INFO(ggml_type_name(type) << " on " << kernels::isa_name(isa));
      ops_for(type, isa).from_float(x.data(), got.data(), nb * 32);
      CHECK(got == ref);
    }
  }
}

TEST_CASE("dequantization is bit-identical on every ISA for arbitrary block bytes") {
  const int64_t nb = 301;
  std::mt19937 gen(9);
  for (GgmlType type : kLegacy) {
    std::vector<uint8_t> blocks(row_bytes(type, nb * 32));
    for (auto& b : blocks) b = static_cast<uint8_t>(gen());
    std::vector<float> ref(nb * 32), got(nb * 32);
    ops_for(type, Isa::kScalar).to_float(blocks.data(), ref.data(), nb * 32);
    for (Isa isa : available_isas()) {
      INFO(ggml_type_name(type) << " on " << kernels::isa_name(isa));
      ops_for(type, isa).to_float(blocks.data(), got.data(), nb * 32);
      CHECK(std::memcmp(got.data(), ref.data(), got.size() * 4) == 0);
    }
  }
}

TEST_CASE("Q4_0 quantizes a ramp exactly as by hand") {
  // x = j - 16: the signed amax is -16, so d = -16 / -8 = 2 and q = trunc(x/2 + 8.5)
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);
  kernels::BlockQ4_0 b;
  ops_for(GgmlType::kQ4_0, Isa::kScalar).from_float(x.data(), &b, 32);
  CHECK(b.d == 0x4000);
  CHECK(b.qs[0] == 0x80);   // x0 = -16 -> 0, x16 = 0 -> 8
  CHECK(b.qs[15] == 0xF8);  // x15 = -1 -> 8 (-0.5 + 8.5), x31 = 15 -> 16 clamped to 15
  std::vector<float> y(32);
  for (Isa isa : available_isas()) {
    ops_for(GgmlType::kQ4_0, isa).to_float(&b, y.data(), 32);
    for (int j = 0; j < 31; ++j) CHECK(y[j] == static_cast<float>(j % 2 == 0 ? j - 16 : j - 15));
    CHECK(y[31] == 14.0f);
  }
}

TEST_CASE("quantize then dequantize stays within each format's error bound") {
  // Per block, with amax = max |x| and range = max - min: Q4_0 |err| <= amax/8 (the positive
  // extreme clamps at 7), Q5_0 <= amax/16, Q4_1 <= range/30, Q5_1 <= range/62, Q8_0 <= amax/254;
  // plus the f16 rounding of d (2^-11 of the largest |q d|: amax, or range for Q4_1/Q5_1) and
  // of m (2^-11 |min|).
  struct Bound {
    GgmlType type;
    double per_amax, per_range;
  };
  const Bound bounds[] = {{GgmlType::kQ4_0, 1.0 / 8, 0},
                          {GgmlType::kQ5_0, 1.0 / 16, 0},
                          {GgmlType::kQ4_1, 0, 1.0 / 30},
                          {GgmlType::kQ5_1, 0, 1.0 / 62},
                          {GgmlType::kQ8_0, 1.0 / 254, 0}};
  const int64_t nb = 4096;
  const auto x = random_normal(nb * 32, 77);
  for (const auto& bound : bounds) {
    const auto& ops = ops_for(bound.type, Isa::kScalar);
    std::vector<uint8_t> q(row_bytes(bound.type, nb * 32));
    std::vector<float> y(nb * 32);
    ops.from_float(x.data(), q.data(), nb * 32);
    ops.to_float(q.data(), y.data(), nb * 32);
    double worst = 0, sq = 0;
    for (int64_t b = 0; b < nb; ++b) {
      double amax = 0, mn = 1e30, mx = -1e30;
      for (int j = 0; j < 32; ++j) {
        const double v = x[b * 32 + j];
        amax = std::max(amax, std::fabs(v));
        mn = std::min(mn, v);
        mx = std::max(mx, v);
      }
      const double f16 = bound.per_amax > 0 ? amax : (mx - mn) + std::fabs(mn);
      const double limit = (bound.per_amax * amax + bound.per_range * (mx - mn) + std::ldexp(f16, -11)) * (1 + 1e-6);
      for (int j = 0; j < 32; ++j) {
        const double err = std::fabs(double(y[b * 32 + j]) - x[b * 32 + j]);
        sq += err * err;
        worst = std::max(worst, err / limit);
      }
    }
    INFO(ggml_type_name(bound.type) << ": worst error / bound = " << worst
                                    << ", rms error = " << std::sqrt(sq / (nb * 32)));
    CHECK(worst <= 1.0);
  }
}
