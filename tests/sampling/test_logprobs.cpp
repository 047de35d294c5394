#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "engine/base/error.h"
#include "engine/sampling/logprobs.h"

using namespace baton;

TEST_CASE("log_sum_exp is exact on small rows and does not overflow on large logits") {
  CHECK(log_sum_exp(std::vector<float>{0.0f, 0.0f}) == Approx(std::log(2.0)));
  CHECK(log_sum_exp(std::vector<float>{1000.0f, 1000.0f}) == Approx(1000.0 + std::log(2.0)));
  CHECK(log_sum_exp(std::vector<float>{-1000.0f}) == Approx(-1000.0));
}

TEST_CASE("top logprobs are the best n, best first, normalised") {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 0.5f};
  const auto top = top_logprobs(logits, 3);
  REQUIRE(top.size() == 3);
  CHECK(top[0].id == 1);
  CHECK(top[1].id == 2);
  CHECK(top[2].id == 0);
  const double lse = std::log(std::exp(1.0) + std::exp(3.0) + std::exp(2.0) + std::exp(0.5));
  CHECK(top[0].logprob == Approx(3.0 - lse));
  CHECK(top[2].logprob == Approx(1.0 - lse));

  double total = 0.0;
  for (const auto& t : top_logprobs(logits, 4)) total += std::exp(t.logprob);
  CHECK(total == Approx(1.0));
}

TEST_CASE("top logprobs break ties toward the lower id and clamp n") {
  const std::vector<float> logits = {2.0f, 5.0f, 5.0f, 2.0f};
  const auto top = top_logprobs(logits, 3);
  REQUIRE(top.size() == 3);
  CHECK(top[0].id == 1);
  CHECK(top[1].id == 2);
  CHECK(top[2].id == 0);
  CHECK(top_logprobs(logits, 10).size() == 4);
  CHECK(top_logprobs(logits, 0).empty());
}

TEST_CASE("top logprobs on a 150k row match a brute-force log-softmax") {
  std::vector<float> logits(150000);
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (float& l : logits) l = normal(gen);
  const auto top = top_logprobs(logits, 5);

  double m = -1e300;
  for (float l : logits) m = std::max(m, static_cast<double>(l));
  double s = 0.0;
  for (float l : logits) s += std::exp(l - m);
  const double lse = m + std::log(s);
  std::vector<size_t> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                    [&](size_t a, size_t b) { return logits[a] > logits[b]; });
  for (size_t i = 0; i < 5; ++i) {
    CHECK(top[i].id == static_cast<int32_t>(order[i]));
    CHECK(top[i].logprob == Approx(logits[order[i]] - lse).margin(1e-6));
  }
}

TEST_CASE("a step record shares one normalisation between the chosen token and the top") {
  const std::vector<float> logits = {0.25f, -1.0f, 4.0f};
  const auto step = step_logprobs(logits, 1, 2);
  CHECK(step.chosen.id == 1);
  CHECK(step.chosen.logprob == token_logprob(logits, 1));
  REQUIRE(step.top.size() == 2);
  CHECK(step.top[0].id == 2);
  CHECK(step.top[0].logprob == token_logprob(logits, 2));
}

TEST_CASE("masked tokens have logprob -inf and bad rows are refused") {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const std::vector<float> logits = {0.0f, neg_inf};
  CHECK(token_logprob(logits, 0) == Approx(0.0));
  CHECK(token_logprob(logits, 1) == neg_inf);
  CHECK_THROWS_AS(token_logprob(logits, 2), Error);
  CHECK_THROWS_AS(token_logprob(logits, -1), Error);
  CHECK_THROWS_AS(log_sum_exp(std::vector<float>{}), Error);
  CHECK_THROWS_AS(log_sum_exp(std::vector<float>{neg_inf, neg_inf}), Error);
  CHECK_THROWS_AS(log_sum_exp(std::vector<float>{0.0f, std::nanf("")}), Error);
}
