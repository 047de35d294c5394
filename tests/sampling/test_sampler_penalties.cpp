// The sampler's penalties (repeat, frequency, presence, over the last repeat_last_n tokens),
// logit_bias and -inf logits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/sampling/sampler.h"
#include "sampler_test_helpers.h"

using namespace baton;
using namespace baton::sampler_test;

TEST_CASE("repeat penalty divides positive logits and multiplies negative ones") {
  SamplerParams p = plain();
  p.temperature = 0.0f;
  p.repeat_penalty = 1.5f;
  const std::vector<float> logits = {3.0f, 2.5f};
  CHECK(Sampler(p).sample(logits, std::vector<int32_t>{0}) == 1);  // 3 / 1.5 = 2 < 2.5

  p.temperature = 1.0f;
  p.repeat_penalty = 2.0f;
  const std::vector<float> mixed = {2.0f, -2.0f, 1.0f, 0.5f};
  const auto dist = Sampler(p).distribution(mixed, std::vector<int32_t>{0, 1, 0});
  const std::vector<double> penalized = {1.0, -4.0, 1.0, 0.5};
  double z = 0.0;
  for (double l : penalized) z += std::exp(l);
  REQUIRE(dist.size() == 4);
  for (size_t i = 0; i < 4; ++i) CHECK(dist[i].p == Approx(std::exp(penalized[i]) / z));
}

TEST_CASE("frequency and presence penalties subtract per occurrence and once") {
  SamplerParams p = plain();
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 1.0f;
  const std::vector<float> logits = {0.0f, 0.0f, 1.0f, 0.5f};
  const auto dist = Sampler(p).distribution(logits, std::vector<int32_t>{2, 3, 2, 2});
  const std::vector<double> penalized = {0.0, 0.0, 1.0 - 1.5 - 1.0, 0.5 - 0.5 - 1.0};
  double z = 0.0;
  for (double l : penalized) z += std::exp(l);
  for (size_t i = 0; i < 4; ++i) CHECK(dist[i].p == Approx(std::exp(penalized[i]) / z));
}

TEST_CASE("penalties look only at the last repeat_last_n tokens of the history") {
  SamplerParams p = plain();
  p.temperature = 0.0f;
  p.repeat_penalty = 10.0f;
  const std::vector<float> logits = {5.0f, 4.0f, 1.0f};
  const std::vector<int32_t> history = {0, 2, 2};
  p.repeat_last_n = 2;  // token 0 is outside the window
  CHECK(Sampler(p).sample(logits, history) == 0);
  p.repeat_last_n = 3;
  CHECK(Sampler(p).sample(logits, history) == 1);
  p.repeat_last_n = -1;  // whole history
  CHECK(Sampler(p).sample(logits, history) == 1);
  p.repeat_last_n = 0;  // none
  CHECK(Sampler(p).sample(logits, history) == 0);
}

TEST_CASE("logit_bias is added before the penalties, -inf bans, ids past the vocabulary are refused") {
  SamplerParams p = plain();
  p.temperature = 0.0f;
  const std::vector<float> logits = {5.0f, 4.0f, 1.0f};
  CHECK(Sampler(p).sample(logits, {}) == 0);
  p.logit_bias = {{0, kNegInf}};
  CHECK(Sampler(p).sample(logits, {}) == 1);
  p.logit_bias = {{2, 4.5f}};  // 1 + 4.5 beats 5
  CHECK(Sampler(p).sample(logits, {}) == 2);
  // First the bias, then the penalty on the biased logit (llama.cpp's chain order): token 2 at
  // 1 + 7 = 8 is divided by 10 and loses to token 0.
  p.logit_bias = {{2, 7.0f}};
  p.repeat_penalty = 10.0f;
  CHECK(Sampler(p).sample(logits, std::vector<int32_t>{2}) == 0);
  p.repeat_penalty = 1.0f;
  // The distribution sees the same biased logits.
  p.temperature = 1.0f;
  p.logit_bias = {{1, 1.0f}};
  const auto dist = Sampler(p).distribution(logits, {});
  const double z = std::exp(5.0) + std::exp(5.0) + std::exp(1.0);
  REQUIRE(dist.size() == 3);
  CHECK(dist[1].p == Approx(std::exp(5.0) / z));
  p.logit_bias = {{3, 1.0f}};
  CHECK_THROWS_WITH(Sampler(p).sample(logits, {}), Catch::Contains("logit_bias token 3"));
  p.logit_bias = {{-1, 1.0f}};
  CHECK_THROWS_WITH(validate(p), Catch::Contains("negative"));
  p.logit_bias = {{0, std::numeric_limits<float>::quiet_NaN()}};
  CHECK_THROWS_WITH(validate(p), Catch::Contains("logit_bias"));
  p.logit_bias = {{0, std::numeric_limits<float>::infinity()}};
  CHECK_THROWS_WITH(validate(p), Catch::Contains("logit_bias"));
}

TEST_CASE("tokens with a -inf logit are never drawn") {
  SamplerParams p = plain();
  Sampler sampler(p);
  const std::vector<float> logits = {kNegInf, 0.0f, kNegInf, 0.0f};
  for (int i = 0; i < 100; ++i) {
    const int32_t t = sampler.sample(logits, {});
    CHECK((t == 1 || t == 3));
  }
}
