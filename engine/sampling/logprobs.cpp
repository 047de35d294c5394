// Log-softmax helpers. The top-n selection keeps a small sorted buffer while scanning the row
// once, so n = 5 over 150k logits allocates nothing proportional to the vocabulary.
#include "engine/sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/base/error.h"
#include "engine/sampling/token_order.h"

namespace baton {

namespace {

void check_row(std::span<const float> logits) {
  if (logits.empty()) fail("logprobs: the logits row is empty (expected n_vocab values)");
  if (logits.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    fail("logprobs: {} logits exceed the largest token id", logits.size());
  }
}

std::vector<TokenLogprob> select_top(std::span<const float> logits, size_t n, double log_z) {
  n = std::min(n, logits.size());
  std::vector<TokenLogprob> top;  // logprob holds the raw logit until the end
  top.reserve(n + 1);
  if (n == 0) return top;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float logit = logits[i];
    const auto id = static_cast<int32_t>(i);
    if (top.size() == n && !ranks_before(logit, id, top.back().logprob, top.back().id)) continue;
    auto pos = std::find_if(top.begin(), top.end(),
                            [&](const TokenLogprob& t) { return ranks_before(logit, id, t.logprob, t.id); });
    top.insert(pos, TokenLogprob{id, logit});
    if (top.size() > n) top.pop_back();
  }
  for (TokenLogprob& t : top) {
    t.logprob = static_cast<float>(static_cast<double>(t.logprob) - log_z);
  }
  return top;
}

float logprob_of(std::span<const float> logits, int32_t id, double log_z) {
  if (id < 0 || static_cast<size_t>(id) >= logits.size()) {
    fail("logprobs: token {} is outside the vocabulary [0, {})", id, logits.size());
  }
  return static_cast<float>(static_cast<double>(logits[static_cast<size_t>(id)]) - log_z);
}

}  // namespace

double log_sum_exp(std::span<const float> logits) {
  check_row(logits);
  float max_logit = kNegInf;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float logit = logits[i];
    if (std::isnan(logit) || logit == std::numeric_limits<float>::infinity()) {
      fail("logprobs: logit of token {} is {} (expected a finite value or -inf)", i, logit);
    }
    max_logit = std::max(max_logit, logit);
  }
  if (max_logit == kNegInf) fail("logprobs: every logit is -inf, the distribution is empty");
  double sum = 0.0;
  for (const float logit : logits) sum += std::exp(static_cast<double>(logit) - max_logit);
  return static_cast<double>(max_logit) + std::log(sum);
}

std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, size_t n) {
  return select_top(logits, n, log_sum_exp(logits));
}

float token_logprob(std::span<const float> logits, int32_t id) { return logprob_of(logits, id, log_sum_exp(logits)); }

StepLogprobs step_logprobs(std::span<const float> logits, int32_t chosen, size_t n_top) {
  const double log_z = log_sum_exp(logits);
  StepLogprobs step;
  step.chosen = TokenLogprob{chosen, logprob_of(logits, chosen, log_z)};
  step.top = select_top(logits, n_top, log_z);
  return step;
}

}  // namespace baton
