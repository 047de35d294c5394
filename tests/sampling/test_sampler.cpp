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

using namespace baton;

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Parameters with every filter and penalty off: plain softmax sampling at temperature 1.
SamplerParams plain() {
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  return p;
}

std::vector<float> logits_of_probs(std::initializer_list<double> probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

std::vector<int32_t> ids_of(const std::vector<TokenProb>& dist) {
  std::vector<int32_t> ids;
  for (const auto& t : dist) ids.push_back(t.id);
  return ids;
}

std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no baton::Error>";
}

}  // namespace

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

TEST_CASE("on a 150k vocabulary top_p keeps exactly the prefix a full sort gives") {
  const size_t n_vocab = 150000;
  std::vector<float> logits(n_vocab);
  std::mt19937 gen(11);
  std::normal_distribution<float> normal(0.0f, 0.5f);  // flat: the prefix spans thousands
  for (float& l : logits) l = normal(gen);

  SamplerParams p = plain();
  p.top_p = 0.6f;
  const auto dist = Sampler(p).distribution(logits, {});

  std::vector<int32_t> order(n_vocab);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  const double max_logit = logits[static_cast<size_t>(order[0])];
  double z = 0.0;
  for (float l : logits) z += std::exp(l - max_logit);
  double mass = 0.0;
  std::vector<int32_t> expected;
  for (int32_t id : order) {
    expected.push_back(id);
    mass += std::exp(logits[static_cast<size_t>(id)] - max_logit) / z;
    if (mass >= 0.6) break;
  }
  std::sort(expected.begin(), expected.end());
  CHECK(expected.size() > 1000);
  CHECK(ids_of(dist) == expected);

  p = SamplerParams{};  // defaults: top_k 40 first
  const auto top40 = ids_of(Sampler(p).distribution(logits, {}));
  CHECK(top40.size() <= 40);
  CHECK(std::is_sorted(top40.begin(), top40.end()));
}

TEST_CASE("top_k and greedy select exactly what a full sort of the biased, penalized logits gives") {
  // Few distinct values (many ties), -inf entries, lengths around the scan's 32-logit blocks,
  // and the largest value placed early, late or in the tail.
  std::mt19937 gen(5);
  for (const size_t n_vocab : {1, 31, 32, 33, 100, 1000, 32000, 32017}) {
    for (int trial = 0; trial < 6; ++trial) {
      std::vector<float> logits(n_vocab);
      std::uniform_int_distribution<int> level(0, trial < 3 ? 7 : 1000);
      for (float& l : logits) l = static_cast<float>(level(gen)) * 0.25f - 1.0f;
      for (size_t i = 0; i < n_vocab; i += 7 + static_cast<size_t>(trial)) logits[i] = kNegInf;
      logits[(gen() % n_vocab)] = 500.0f;                // a clear maximum somewhere
      if (trial % 2 == 1) logits[n_vocab - 1] = 500.0f;  // tied with it, higher id
      SamplerParams p = plain();
      std::vector<int32_t> history;
      if (trial >= 4) {
        p.logit_bias = {{static_cast<int32_t>(n_vocab / 2), 3.5f}};
        if (n_vocab > 1) p.logit_bias.emplace_back(0, kNegInf);
        p.repeat_penalty = 1.3f;
        p.frequency_penalty = 0.2f;
        for (int h = 0; h < 20; ++h) history.push_back(static_cast<int32_t>(gen() % n_vocab));
      }
      // The reference: the chain's arithmetic on a copy, then a full sort by rank.
      std::vector<float> ref = logits;
      for (const auto& [id, bias] : p.logit_bias) ref[static_cast<size_t>(id)] += bias;
      if (trial >= 4) {
        std::vector<int32_t> window(history.end() - std::min<ptrdiff_t>(64, ssize(history)), history.end());
        std::sort(window.begin(), window.end());
        for (size_t i = 0; i < window.size();) {
          size_t j = i;
          while (j < window.size() && window[j] == window[i]) ++j;
          float& l = ref[static_cast<size_t>(window[i])];
          l = l <= 0.0f ? l * p.repeat_penalty : l / p.repeat_penalty;
          l -= static_cast<float>(j - i) * p.frequency_penalty + p.presence_penalty;
          i = j;
        }
      }
      std::vector<int32_t> order;
      for (size_t i = 0; i < n_vocab; ++i)
        if (ref[i] != kNegInf) order.push_back(static_cast<int32_t>(i));
      std::sort(order.begin(), order.end(),
                [&](int32_t a, int32_t b) { return ref[a] > ref[b] || (ref[a] == ref[b] && a < b); });
      for (const int32_t k : {1, 2, 40, 100, 4000}) {
        p.top_k = k;
        std::vector<int32_t> expected(order.begin(), order.begin() + std::min<ptrdiff_t>(k, ssize(order)));
        std::sort(expected.begin(), expected.end());
        INFO("n_vocab " << n_vocab << " trial " << trial << " top_k " << k);
        CHECK(ids_of(Sampler(p).distribution(logits, history)) == expected);
      }
      p.temperature = 0.0f;
      INFO("n_vocab " << n_vocab << " trial " << trial << " greedy");
      CHECK(Sampler(p).sample(logits, history) == order.front());
    }
  }
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
