// RoPE: the angle cache follows ggml's float recurrence (and its YaRN and freq-factor hooks),
// both layouts rotate the right pairs, and every ISA's rotation is bitwise equal to scalar.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/ops/ops.h"
#include "kernels/ops/ops_rope.h"

using namespace baton::kernels;

namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::vector<const OpsTable*> supported_tables() {
  std::vector<const OpsTable*> tables;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
    if (isa_supported(isa)) tables.push_back(&ops_table(isa));
  return tables;
}

}  // namespace

TEST_CASE("rope cache is cos and sin of pos times base to the minus 2i over n_rot") {
  RopeConfig cfg;
  cfg.n_rot = 128;
  cfg.freq_base = 500000.0f;
  std::vector<float> cache(128);
  rope_cache(cfg, 0, cache.data());
  for (int i = 0; i < 64; ++i) {
    CHECK(cache[i] == 1.0f);
    CHECK(cache[64 + i] == 0.0f);
  }
  for (int64_t pos : {1, 7, 50}) {
    rope_cache(cfg, pos, cache.data());
    for (int i = 0; i < 64; ++i) {
      const double theta = pos * std::pow(500000.0, -2.0 * i / 128);
      CHECK(cache[i] == Approx(std::cos(theta)).margin(5e-5));
      CHECK(cache[64 + i] == Approx(std::sin(theta)).margin(5e-5));
    }
  }
}

TEST_CASE("rope cache uses ggml's float recurrence for theta, also far from position 0") {
  RopeConfig cfg;
  cfg.n_rot = 64;
  std::vector<float> cache(64);
  const int64_t pos = 4097;
  rope_cache(cfg, pos, cache.data());
  const float theta_scale = std::pow(10000.0f, -2.0f / 64);
  float theta = static_cast<float>(pos);
  for (int i = 0; i < 32; ++i) {
    CHECK(cache[i] == std::cos(theta));
    CHECK(cache[32 + i] == std::sin(theta));
    theta *= theta_scale;
  }
}

TEST_CASE("rope cache applies freq_scale, freq_factors and attn_factor") {
  std::vector<float> factors(16);
  for (int i = 0; i < 16; ++i) factors[i] = 1.0f + static_cast<float>(i) * 0.5f;
  RopeConfig cfg;
  cfg.n_rot = 32;
  cfg.freq_scale = 0.25f;
  cfg.attn_factor = 0.5f;
  cfg.freq_factors = factors.data();
  std::vector<float> cache(32);
  rope_cache(cfg, 9, cache.data());
  for (int i = 0; i < 16; ++i) {
    const double theta = 0.25 * 9 * std::pow(10000.0, -2.0 * i / 32) / factors[i];
    CHECK(cache[i] == Approx(0.5 * std::cos(theta)).margin(1e-6));
    CHECK(cache[16 + i] == Approx(0.5 * std::sin(theta)).margin(1e-6));
  }
}

TEST_CASE("YaRN correction dims and ramp mix extrapolated and interpolated angles") {
  float dims[2];
  rope_yarn_corr_dims(128, 4096, 10000.0f, 32.0f, 1.0f, dims);
  // 128·ln(4096 / (β·2π)) / (2·ln 10000): 20.94 for β = 32 (floor), 45.03 for β = 1 (ceil)
  CHECK(dims[0] == 20.0f);
  CHECK(dims[1] == 46.0f);

  RopeConfig cfg;
  cfg.n_rot = 128;
  cfg.freq_scale = 0.25f;
  cfg.ext_factor = 1.0f;
  cfg.n_ctx_orig = 4096;
  std::vector<float> cache(128);
  rope_cache(cfg, 1000, cache.data());
  const double mscale = 1.0 + 0.1 * std::log(4.0);
  for (int i : {0, 5, 19, 50, 63}) {
    const double extrap = 1000 * std::pow(10000.0, -2.0 * i / 128);
    const double ramp = 1.0 - std::fmin(1.0, std::fmax(0.0, (i - 20.0) / 26.0));
    const double theta = extrap * 0.25 * (1 - ramp) + extrap * ramp;
    CHECK(cache[i] == Approx(std::cos(theta) * mscale).margin(2e-3));
    CHECK(cache[64 + i] == Approx(std::sin(theta) * mscale).margin(2e-3));
  }
}

TEST_CASE("normal rope rotates adjacent pairs and neox rotates halves, leaving the rest") {
  const int64_t head_dim = 24, n_head = 3;
  RopeConfig cfg;
  cfg.n_rot = 16;
  std::vector<float> cache(16);
  rope_cache(cfg, 33, cache.data());
  const auto x = random_floats(static_cast<size_t>(head_dim * n_head), 1);

  for (RopeLayout layout : {RopeLayout::kNormal, RopeLayout::kNeox}) {
    cfg.layout = layout;
    auto y = x;
    rope_apply(cfg, cache.data(), y.data(), n_head, head_dim);
    for (int64_t h = 0; h < n_head; ++h) {
      const float* xh = x.data() + h * head_dim;
      const float* yh = y.data() + h * head_dim;
      for (int i = 0; i < 8; ++i) {
        const int a = layout == RopeLayout::kNormal ? 2 * i : i;
        const int b = layout == RopeLayout::kNormal ? 2 * i + 1 : i + 8;
        const double c = cache[i], s = cache[8 + i];
        CHECK(yh[a] == Approx(xh[a] * c - xh[b] * s).margin(1e-6));
        CHECK(yh[b] == Approx(xh[a] * s + xh[b] * c).margin(1e-6));
      }
      for (int64_t d = 16; d < head_dim; ++d) CHECK(yh[d] == xh[d]);
    }
  }
}

TEST_CASE("rope rotation is bitwise equal on every ISA for awkward sizes") {
  for (int n_rot : {2, 6, 8, 14, 16, 30, 32, 64, 128, 256}) {
    std::vector<float> cache(static_cast<size_t>(n_rot));
    RopeConfig cfg;
    cfg.n_rot = n_rot;
    rope_cache(cfg, 123, cache.data());
    const auto x = random_floats(static_cast<size_t>(n_rot), static_cast<uint32_t>(n_rot));
    for (bool neox : {false, true}) {
      auto ref = x;
      ops_table(Isa::kScalar).rope_rotate(cache.data(), ref.data(), n_rot, neox);
      for (const OpsTable* t : supported_tables()) {
        INFO("isa " << isa_name(t->isa) << " n_rot " << n_rot << " neox " << neox);
        auto y = x;
        t->rope_rotate(cache.data(), y.data(), n_rot, neox);
        CHECK(std::memcmp(y.data(), ref.data(), y.size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("rope over tokens uses each token's own position") {
  RopeConfig cfg;
  cfg.n_rot = 8;
  cfg.layout = RopeLayout::kNeox;
  const int64_t head_dim = 8, n_head = 2;
  const size_t stride = 20;  // tokens padded
  const std::vector<int32_t> pos = {5, 0, 4000};
  const auto x = random_floats(stride * pos.size(), 3);
  auto y = x;
  rope(cfg, pos, y.data(), n_head, head_dim, stride);
  for (size_t t = 0; t < pos.size(); ++t) {
    std::vector<float> cache(8);
    rope_cache(cfg, pos[t], cache.data());
    std::vector<float> one(x.begin() + t * stride, x.begin() + t * stride + n_head * head_dim);
    rope_apply(cfg, cache.data(), one.data(), n_head, head_dim);
    CHECK(std::memcmp(one.data(), y.data() + t * stride, one.size() * sizeof(float)) == 0);
    for (size_t d = n_head * head_dim; d < stride; ++d) CHECK(y[t * stride + d] == x[t * stride + d]);
  }
}
