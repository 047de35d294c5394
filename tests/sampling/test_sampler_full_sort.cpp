// On large and awkward vocabularies the sampler's selection (top_p, top_k, greedy) is exactly what
// a full sort of the biased, penalized logits gives.
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
