// The sampler's draws (greedy, seeded, the documented draw), its filters (top_k, top_p, min_p)
// and temperature, and the parameters and inputs it refuses.
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

TEST_CASE("greedy picks the largest logit and breaks ties toward the lowest id") {
  SamplerParams p = plain();
  p.temperature = 0.0f;
  Sampler sampler(p);
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, 2.0f};
  CHECK(sampler.sample(logits, {}) == 1);
  p.temperature = -1.0f;
  CHECK(Sampler(p).sample(logits, {}) == 1);
  const auto dist = sampler.distribution(logits, {});
  REQUIRE(dist.size() == 1);
  CHECK(dist[0].id == 1);
  CHECK(dist[0].p == 1.0f);
}

TEST_CASE("greedy does not depend on the seed or on earlier calls") {
  SamplerParams p;
  p.temperature = 0.0f;
  p.seed = 1;
  Sampler a(p);
  p.seed = 999;
  Sampler b(p);
  const std::vector<float> logits = {0.1f, 0.2f, 5.0f, 0.3f};
  for (int i = 0; i < 10; ++i) {
    CHECK(a.sample(logits, {}) == 2);
    CHECK(b.sample(logits, {}) == 2);
  }
}

TEST_CASE("the same seed and inputs give the same tokens, another seed other tokens") {
  std::vector<float> logits(1000);
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (float& l : logits) l = normal(gen);

  SamplerParams p;  // llama.cpp defaults: top_k 40, top_p 0.95, min_p 0.05, temperature 0.8
  p.seed = 42;
  Sampler a(p);
  Sampler b(p);
  p.seed = 43;
  Sampler c(p);
  std::vector<int32_t> ta, tb, tc;
  for (int i = 0; i < 200; ++i) {
    ta.push_back(a.sample(logits, ta));
    tb.push_back(b.sample(logits, tb));
    tc.push_back(c.sample(logits, tc));
  }
  CHECK(ta == tb);
  CHECK(ta != tc);

  a.reseed(42);
  std::vector<int32_t> again;
  for (int i = 0; i < 200; ++i) again.push_back(a.sample(logits, again));
  CHECK(again == ta);
}

TEST_CASE("the draw is the documented one: u = mt19937() / 2^32 over candidates by id") {
  const std::vector<float> logits = logits_of_probs({0.1, 0.2, 0.3, 0.4});
  SamplerParams p = plain();
  p.seed = 12345;
  Sampler sampler(p);
  const auto dist = sampler.distribution(logits, {});
  std::mt19937 reference(12345);
  for (int i = 0; i < 500; ++i) {
    const double u = static_cast<double>(reference()) / 4294967296.0;
    double running = 0.0;
    int32_t expected = dist.back().id;
    for (const auto& t : dist) {
      running += t.p;
      if (running > u) {
        expected = t.id;
        break;
      }
    }
    REQUIRE(sampler.sample(logits, {}) == expected);
  }
}

TEST_CASE("draw frequencies follow the distribution") {
  const std::vector<float> logits = logits_of_probs({0.5, 0.3, 0.2});
  SamplerParams p = plain();
  p.seed = 3;
  Sampler sampler(p);
  std::vector<int> counts(3, 0);
  const int n = 20000;
  for (int i = 0; i < n; ++i) ++counts[static_cast<size_t>(sampler.sample(logits, {}))];
  CHECK(counts[0] / double(n) == Approx(0.5).margin(0.015));
  CHECK(counts[1] / double(n) == Approx(0.3).margin(0.015));
  CHECK(counts[2] / double(n) == Approx(0.2).margin(0.015));
}

TEST_CASE("top_k keeps the k best logits, ties to the lower id, and renormalises") {
  SamplerParams p = plain();
  p.top_k = 2;
  Sampler sampler(p);
  const auto dist = sampler.distribution(logits_of_probs({0.1, 0.4, 0.2, 0.3}), {});
  REQUIRE(ids_of(dist) == std::vector<int32_t>{1, 3});
  CHECK(dist[0].p == Approx(0.4 / 0.7));
  CHECK(dist[1].p == Approx(0.3 / 0.7));

  const std::vector<float> tied = {1.0f, 2.0f, 2.0f, 2.0f};
  CHECK(ids_of(sampler.distribution(tied, {})) == std::vector<int32_t>{1, 2});
  p.top_k = 10;  // more than the vocabulary: no effect
  CHECK(Sampler(p).distribution(tied, {}).size() == 4);
}

TEST_CASE("top_p keeps the shortest best-first prefix whose mass reaches p") {
  const std::vector<float> logits = logits_of_probs({0.15, 0.5, 0.05, 0.3});
  SamplerParams p = plain();
  p.top_p = 0.7f;  // 0.5 < 0.7 <= 0.8
  auto dist = Sampler(p).distribution(logits, {});
  REQUIRE(ids_of(dist) == std::vector<int32_t>{1, 3});
  CHECK(dist[0].p == Approx(0.5 / 0.8));
  p.top_p = 0.85f;  // 0.8 < 0.85 <= 0.95
  CHECK(ids_of(Sampler(p).distribution(logits, {})) == std::vector<int32_t>{0, 1, 3});
  p.top_p = 0.0f;  // always at least one token
  CHECK(ids_of(Sampler(p).distribution(logits, {})) == std::vector<int32_t>{1});
}

TEST_CASE("min_p keeps the tokens at least min_p times as likely as the best one") {
  const std::vector<float> logits = logits_of_probs({0.15, 0.5, 0.05, 0.3});
  SamplerParams p = plain();
  p.min_p = 0.2f;  // keep p >= 0.1
  CHECK(ids_of(Sampler(p).distribution(logits, {})) == std::vector<int32_t>{0, 1, 3});
  p.min_p = 0.7f;  // keep p >= 0.35
  CHECK(ids_of(Sampler(p).distribution(logits, {})) == std::vector<int32_t>{1});
  p.min_p = 1.0f;
  CHECK(ids_of(Sampler(p).distribution(logits, {})) == std::vector<int32_t>{1});
}

TEST_CASE("top_p measures the mass of what top_k left, as in llama.cpp's chain order") {
  const std::vector<float> logits = logits_of_probs({0.4, 0.3, 0.2, 0.1});
  SamplerParams p = plain();
  p.top_p = 0.5f;
  CHECK(ids_of(Sampler(p).distribution(logits, {})) == std::vector<int32_t>{0, 1});
  p.top_k = 2;  // renormalised: 0.571, 0.429 -> the first token alone reaches 0.5
  CHECK(ids_of(Sampler(p).distribution(logits, {})) == std::vector<int32_t>{0});
  // With both top_p and min_p the shorter prefix wins.
  p.top_k = 0;
  p.top_p = 0.95f;  // would keep 4
  p.min_p = 0.6f;   // keeps p >= 0.24: 2
  CHECK(ids_of(Sampler(p).distribution(logits, {})) == std::vector<int32_t>{0, 1});
}

TEST_CASE("temperature reshapes the distribution after the filters") {
  const std::vector<float> logits = logits_of_probs({0.8, 0.2});
  SamplerParams p = plain();
  p.temperature = 2.0f;
  auto dist = Sampler(p).distribution(logits, {});
  CHECK(dist[0].p == Approx(std::sqrt(0.8) / (std::sqrt(0.8) + std::sqrt(0.2))));
  p.temperature = 0.5f;
  dist = Sampler(p).distribution(logits, {});
  CHECK(dist[0].p == Approx(0.64 / 0.68));
  // top_p is decided at temperature 1: 0.8 >= 0.75 keeps one token even though T flattens.
  p.temperature = 5.0f;
  p.top_p = 0.75f;
  CHECK(Sampler(p).distribution(logits, {}).size() == 1);
}

TEST_CASE("invalid sampler parameters are refused naming the field") {
  const auto refused = [](auto mutate) {
    SamplerParams p;
    mutate(p);
    return error_of([&] { Sampler s(p); });
  };
  CHECK_THAT(refused([](auto& p) { p.top_p = -0.1f; }), Catch::Contains("top_p = -0.1"));
  CHECK_THAT(refused([](auto& p) { p.top_p = 1.5f; }), Catch::Contains("top_p"));
  CHECK_THAT(refused([](auto& p) { p.min_p = -0.5f; }), Catch::Contains("min_p"));
  CHECK_THAT(refused([](auto& p) { p.min_p = 2.0f; }), Catch::Contains("min_p"));
  CHECK_THAT(refused([](auto& p) { p.top_k = -1; }), Catch::Contains("top_k = -1"));
  CHECK_THAT(refused([](auto& p) { p.temperature = std::nanf(""); }), Catch::Contains("temperature"));
  CHECK_THAT(refused([](auto& p) { p.repeat_penalty = 0.0f; }), Catch::Contains("repeat_penalty"));
  CHECK_THAT(refused([](auto& p) { p.repeat_last_n = -2; }), Catch::Contains("repeat_last_n"));
  CHECK_THAT(refused([](auto& p) { p.presence_penalty = INFINITY; }), Catch::Contains("presence_penalty"));
  CHECK_THAT(refused([](auto& p) { p.frequency_penalty = std::nanf(""); }), Catch::Contains("frequency_penalty"));
  CHECK_NOTHROW(validate(SamplerParams{}));
}

TEST_CASE("bad logits or history are refused with the offending index") {
  Sampler sampler(plain());
  CHECK_THAT(error_of([&] { sampler.sample({}, {}); }), Catch::Contains("empty"));
  const std::vector<float> with_nan = {0.0f, std::nanf(""), 1.0f};
  CHECK_THAT(error_of([&] { sampler.sample(with_nan, {}); }), Catch::Contains("token 1"));
  const std::vector<float> all_masked = {kNegInf, kNegInf};
  CHECK_THAT(error_of([&] { sampler.sample(all_masked, {}); }), Catch::Contains("-inf"));

  SamplerParams p = plain();
  p.repeat_penalty = 1.1f;
  Sampler penalizing(p);
  const std::vector<float> logits = {0.0f, 1.0f};
  const std::vector<int32_t> history = {1, 7};
  CHECK_THAT(error_of([&] { penalizing.sample(logits, history); }), Catch::Contains("history token 7 at position 1"));
}
