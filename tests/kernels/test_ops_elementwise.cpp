// Row ops: every ISA variant this CPU runs against the scalar reference (bitwise where the
// variants share an algorithm), and the scalar reference against the mathematical definition
// evaluated in double.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/base/fp16.h"
#include "kernels/ops/ops.h"

using namespace baton;
using namespace baton::kernels;

namespace {

const int64_t kSizes[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 4096, 4099};

std::vector<float> random_floats(int64_t n, uint32_t seed, float lo = -4.0f, float hi = 4.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

std::vector<const OpsTable*> supported_tables() {
  std::vector<const OpsTable*> tables;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
    if (isa_supported(isa)) tables.push_back(&ops_table(isa));
  return tables;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// "" when |a - b| <= rel * |b| + abs elementwise, else the first element that is not.
std::string mismatch(const std::vector<float>& a, const std::vector<double>& b, double rel, double abs = 0) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i] || std::fabs(a[i] - b[i]) <= rel * std::fabs(b[i]) + abs) continue;
    char buf[160];
    std::snprintf(buf, sizeof buf, "element %zu: got %.9g expected %.9g", i, double(a[i]), b[i]);
    return buf;
  }
  return "";
}

}  // namespace

TEST_CASE("rms_norm matches the double definition and is bitwise equal on every ISA") {
  const auto& ref = ops_table(Isa::kScalar);
  for (int64_t n : kSizes) {
    INFO("n = " << n);
    auto x = random_floats(n, 1 + n), w = random_floats(n, 2 + n);
    std::vector<float> y0(x.size());
    ref.rms_norm(x.data(), w.data(), y0.data(), n, 1e-5f);
    double ss = 0;
    for (float v : x) ss += double(v) * v;
    std::vector<double> expect(x.size());
    for (size_t i = 0; i < x.size(); ++i) expect[i] = x[i] / std::sqrt(ss / n + 1e-5) * w[i];
    CHECK(mismatch(y0, expect, 1e-6, 1e-7) == "");
    for (const OpsTable* t : supported_tables()) {
      INFO("isa " << isa_name(t->isa));
      std::vector<float> y(x.size());
      t->rms_norm(x.data(), w.data(), y.data(), n, 1e-5f);
      CHECK(same_bits(y, y0));
      std::vector<float> in_place = x;  // y may alias x; no weight
      t->rms_norm(in_place.data(), nullptr, in_place.data(), n, 1e-5f);
      std::vector<float> unweighted(x.size());
      ref.rms_norm(x.data(), nullptr, unweighted.data(), n, 1e-5f);
      CHECK(same_bits(in_place, unweighted));
    }
  }
}

TEST_CASE("softmax sums to one, matches the double definition, and SIMD variants agree bitwise") {
  for (int64_t n : kSizes) {
    INFO("n = " << n);
    auto x = random_floats(n, 3 + n, -20.0f, 20.0f);
    if (n > 4) x[2] = -std::numeric_limits<float>::infinity();  // a masked entry
    // The exponent x - max is rounded to float first, as in every implementation (ggml's too).
    float max = -INFINITY;
    for (float v : x) max = std::fmax(max, v);
    double sum = 0;
    for (float v : x) sum += std::exp(double(v - max));
    std::vector<double> expect(x.size());
    for (size_t i = 0; i < x.size(); ++i) expect[i] = std::exp(double(x[i] - max)) / sum;
    std::vector<float> first_simd;
    for (const OpsTable* t : supported_tables()) {
      INFO("isa " << isa_name(t->isa));
      std::vector<float> y = x;
      t->softmax(y.data(), y.data(), n);  // in place
      CHECK(mismatch(y, expect, 2e-6, 1e-30) == "");
      if (n > 4) CHECK(y[2] == 0.0f);
      if (t->isa != Isa::kScalar) {
        if (first_simd.empty()) first_simd = y;
        else CHECK(same_bits(y, first_simd));
      }
    }
  }
}

TEST_CASE("silu and swiglu match the double definition over the whole float range") {
  std::vector<float> x = random_floats(1000, 4, -30.0f, 30.0f);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 80.0f, -80.0f, 88.0f, -88.0f, 100.0f, -100.0f, 1e6f, -1e6f,
                  std::numeric_limits<float>::infinity()})
    x.push_back(v);
  auto up = random_floats(static_cast<int64_t>(x.size()), 5);
  std::vector<double> expect_silu(x.size()), expect_swiglu(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    expect_silu[i] = x[i] / (1.0 + std::exp(-double(x[i])));
    expect_swiglu[i] = expect_silu[i] * up[i];
  }
  std::vector<float> first_simd;
  for (const OpsTable* t : supported_tables()) {
    INFO("isa " << isa_name(t->isa));
    for (int64_t n : {int64_t{1}, int64_t{13}, static_cast<int64_t>(x.size())}) {
      std::vector<float> y(static_cast<size_t>(n)), z(static_cast<size_t>(n));
      t->silu(x.data(), y.data(), n);
      t->swiglu(x.data(), up.data(), z.data(), n);
      CHECK(mismatch(y, std::vector<double>(expect_silu.begin(), expect_silu.begin() + n), 1e-6, 1e-37) == "");
      CHECK(mismatch(z, std::vector<double>(expect_swiglu.begin(), expect_swiglu.begin() + n), 1e-6, 1e-37) == "");
      if (n == static_cast<int64_t>(x.size()) && t->isa != Isa::kScalar) {
        if (first_simd.empty()) first_simd = y;
        else CHECK(same_bits(y, first_simd));
      }
    }
  }
}

TEST_CASE("swiglu is ggml's AVX2 ggml_vec_swiglu_f32, bitwise equal on every ISA") {
  // groups of 8 through ggml_v_expf (polynomial, not libm), the n mod 8 tail through libm expf
  std::vector<float> x = random_floats(203, 6, -20.0f, 20.0f);
  for (float v : {0.0f, -0.0f, 1e-30f, 87.0f, -87.0f, 95.0f, -95.0f, 150.0f, -150.0f, 200.0f, -200.0f}) x.push_back(v);
  const auto up = random_floats(static_cast<int64_t>(x.size()), 7);
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> ref(x.size());
  ops_table(Isa::kScalar).swiglu(x.data(), up.data(), ref.data(), n);
  // The tail (n mod 8 = 6 elements) uses libm exactly.
  for (int64_t i = n / 8 * 8; i < n; ++i) CHECK(ref[i] == (x[i] / (1.0f + std::exp(-x[i]))) * up[i]);
  // ggml_v_expf is within 2 ulp of expf: the vector part stays close to the libm result.
  for (int64_t i = 0; i < n / 8 * 8; ++i) {
    const float libm = (x[i] / (1.0f + std::exp(-x[i]))) * up[i];
    INFO("i=" << i << " x=" << x[i]);
    CHECK(std::fabs(ref[i] - libm) <= 1e-6f * std::fabs(libm) + 1e-37f);
  }
  for (const OpsTable* t : supported_tables()) {
    INFO("isa " << isa_name(t->isa));
    for (int64_t m : {int64_t{5}, int64_t{8}, int64_t{61}, n}) {
      std::vector<float> y(static_cast<size_t>(m)), r(static_cast<size_t>(m));
      ops_table(Isa::kScalar).swiglu(x.data(), up.data(), r.data(), m);
      t->swiglu(x.data(), up.data(), y.data(), m);
      CHECK(same_bits(y, r));
    }
  }
}

TEST_CASE("gelu follows ggml's f16 table and clamps at plus and minus ten") {
  auto x = random_floats(777, 6, -12.0f, 12.0f);
  x.push_back(-10.0f);
  x.push_back(10.0f);
  std::vector<float> y0(x.size());
  ops_table(Isa::kScalar).gelu(x.data(), y0.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const float v = x[i];
    if (v <= -10.0f) {
      CHECK(y0[i] == 0.0f);
    } else if (v >= 10.0f) {
      CHECK(y0[i] == v);
    } else {
      const double h = fp16_to_fp32(fp32_to_fp16(v));  // the table is indexed by the f16 input
      const double g = 0.5 * h * (1.0 + std::tanh(0.7978845608028654 * h * (1.0 + 0.044715 * h * h)));
      // f16 output rounding, and ggml's f32 formula cancels in 1 + tanh(z) for z near -4
      CHECK(std::fabs(y0[i] - g) <= 1e-3 * std::fabs(g) + 3e-7);
    }
  }
  for (const OpsTable* t : supported_tables()) {
    std::vector<float> y(x.size());
    t->gelu(x.data(), y.data(), static_cast<int64_t>(x.size()));
    CHECK(same_bits(y, y0));
  }
}

TEST_CASE("add, mul and scale are exact on every ISA, also in place") {
  for (int64_t n : kSizes) {
    auto a = random_floats(n, 7 + n), b = random_floats(n, 8 + n);
    std::vector<float> sum(a.size()), prod(a.size()), scaled(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      sum[i] = a[i] + b[i];
      prod[i] = a[i] * b[i];
      scaled[i] = a[i] * 0.125f;
    }
    for (const OpsTable* t : supported_tables()) {
      INFO("isa " << isa_name(t->isa) << " n " << n);
      std::vector<float> y = a;
      t->add(y.data(), b.data(), y.data(), n);
      CHECK(same_bits(y, sum));
      y = a;
      t->mul(y.data(), b.data(), y.data(), n);
      CHECK(same_bits(y, prod));
      t->scale(a.data(), 0.125f, y.data(), n);
      CHECK(same_bits(y, scaled));
    }
  }
}

TEST_CASE("f16 row conversions agree bit for bit with the scalar converters on every ISA") {
  std::vector<float> x = random_floats(5000, 9, -70000.0f, 70000.0f);
  auto small = random_floats(3000, 10, -1e-4f, 1e-4f);  // f16 subnormals and ties
  x.insert(x.end(), small.begin(), small.end());
  for (float v : {0.0f, -0.0f, 65504.0f, 65520.0f, -65520.0f, 1e-8f, 5.9604645e-8f, 2.9802322e-8f,
                  std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min()})
    x.push_back(v);
  std::vector<uint16_t> expect(x.size());
  for (size_t i = 0; i < x.size(); ++i) expect[i] = fp32_to_fp16(x[i]);
  std::vector<uint16_t> all_halves;
  for (uint32_t h = 0; h < 0x10000; ++h)
    if (!std::isnan(fp16_to_fp32(static_cast<uint16_t>(h)))) all_halves.push_back(static_cast<uint16_t>(h));

  for (const OpsTable* t : supported_tables()) {
    INFO("isa " << isa_name(t->isa));
    for (int64_t n : {int64_t{5}, int64_t{17}, static_cast<int64_t>(x.size())}) {
      std::vector<uint16_t> h(static_cast<size_t>(n));
      t->f32_to_f16(x.data(), h.data(), n);
      CHECK(std::memcmp(h.data(), expect.data(), h.size() * 2) == 0);
    }
    std::vector<float> back(all_halves.size());
    t->f16_to_f32(all_halves.data(), back.data(), static_cast<int64_t>(all_halves.size()));
    bool exact = true;
    for (size_t i = 0; i < all_halves.size(); ++i) {
      const float want = fp16_to_fp32(all_halves[i]);
      exact = exact && std::memcmp(&back[i], &want, sizeof(float)) == 0;
    }
    CHECK(exact);
  }
}

TEST_CASE("the entry functions use the active ISA's table") {
  auto x = random_floats(37, 11);
  std::vector<float> a(x.size()), b(x.size());
  silu(x.data(), a.data(), 37);
  active_ops().silu(x.data(), b.data(), 37);
  CHECK(same_bits(a, b));
  // The AVX-VNNI tier has no float row ops of its own: it serves AVX2's table.
  CHECK(&active_ops() == &ops_table(active_isa()));
  CHECK(active_ops().isa == (active_isa() == Isa::kAvxVnni ? Isa::kAvx2 : active_isa()));
}
