// The vector expf of the one-chunk attention (kernels/attention/expf_glibc_simd.inc) against libm's expf,
// bit for bit: on a stride through every float, densely where attention calls it (scores
// minus the running maximum, [-104, 0]) and at the special values. A hidden test covers all
// 2^32 floats (run it with `test_kernels "[.exhaustive]"`).
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/attention/attention_internal.h"
#include "legacy_test_util.h"

namespace {

using baton::kernels::Isa;
using ExpFn = void (*)(const float*, float*, int64_t);

ExpFn exp_of(Isa isa) {
  return isa == Isa::kAvx512 ? baton::kernels::avx512::expf_glibc : baton::kernels::avx2::expf_glibc;
}

// Bit patterns [first, last] with `stride`, in batches: the number of floats whose result differs
// from std::exp, the first of them in *example.
uint64_t mismatches(ExpFn fn, uint64_t first, uint64_t last, uint64_t stride, uint32_t* example) {
  std::vector<float> x, y;
  uint64_t bad = 0;
  for (uint64_t b = first; b <= last;) {
    x.clear();
    for (; b <= last && x.size() < 4093; b += stride) x.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
    y.assign(x.size(), 0.0f);
    fn(x.data(), y.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = std::exp(x[i]);
      const bool same =
          std::isnan(want) ? std::isnan(y[i]) : std::bit_cast<uint32_t>(want) == std::bit_cast<uint32_t>(y[i]);
      if (!same && bad++ == 0) *example = std::bit_cast<uint32_t>(x[i]);
    }
  }
  return bad;
}

std::vector<Isa> vector_isas() {
  std::vector<Isa> out;
  for (Isa isa : baton::test::available_isas())
    if (isa != Isa::kScalar) out.push_back(isa);
  return out;
}

}  // namespace

TEST_CASE("the attention's vector expf is bitwise libm's expf") {
  for (Isa isa : vector_isas()) {
    INFO("isa " << baton::kernels::isa_name(isa));
    auto check_range = [&](uint64_t first, uint64_t last, uint64_t stride) {
      uint32_t example = 0;
      const uint64_t bad = mismatches(exp_of(isa), first, last, stride, &example);
      INFO("bits " << std::hex << first << ".." << last << ": first mismatch at " << example);
      CHECK(bad == 0);
    };
    // Every 997th float of the whole range (4.3 million), all signs, NaNs and infinities included.
    check_range(0, 0xffffffffu, 997);
    // Attention's arguments: every 31st float in [-104, 0] (35 million).
    check_range(0x80000000u, std::bit_cast<uint32_t>(-104.0f), 31);
    // Both thresholds of the special cases and their neighbours, every float.
    for (float edge : {-0x1.9fe368p6f, 0x1.62e42ep6f, -88.0f, 88.0f})
      check_range(std::bit_cast<uint32_t>(edge) - 5000, std::bit_cast<uint32_t>(edge) + 5000, 1);
    const float inf = std::numeric_limits<float>::infinity();
    const float specials[] = {0.0f,
                              -0.0f,
                              inf,
                              -inf,
                              std::numeric_limits<float>::quiet_NaN(),
                              1e-30f,
                              -1e-30f,
                              std::numeric_limits<float>::denorm_min(),
                              -std::numeric_limits<float>::denorm_min()};
    float y[9];
    exp_of(isa)(specials, y, 9);  // also the 1-lane tail
    for (int i = 0; i < 9; ++i) {
      INFO("x = " << specials[i]);
      if (std::isnan(specials[i])) CHECK(std::isnan(y[i]));
      else CHECK(std::bit_cast<uint32_t>(y[i]) == std::bit_cast<uint32_t>(std::exp(specials[i])));
    }
  }
}

TEST_CASE("the attention's vector expf is bitwise libm's expf on all 2^32 floats", "[.exhaustive]") {
  for (Isa isa : vector_isas()) {
    INFO("isa " << baton::kernels::isa_name(isa));
    uint32_t example = 0;
    const uint64_t bad = mismatches(exp_of(isa), 0, 0xffffffffu, 1, &example);
    INFO("first mismatch at bits " << std::hex << example);
    CHECK(bad == 0);
  }
}
