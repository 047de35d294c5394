// Log-probabilities of the raw model distribution (softmax of the logits, temperature 1, no
// penalties or filters): the top-n per step for `--json` golden output and the OpenAI API's
// logprobs. Computed max-subtracted in double; each call is one or two passes over the row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace baton {

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0.0f;
};

// log(sum(exp(logits))), max-subtracted, in double.
// Throws baton::Error on an empty row, a NaN or +inf logit, or when every logit is -inf.
double log_sum_exp(std::span<const float> logits);

// The n most likely tokens, best first; ties go to the lower id. n is clamped to the row size;
// n = 0 gives an empty vector. Errors as log_sum_exp.
std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, size_t n);

// Log-probability of token `id`. Throws baton::Error if id is outside [0, logits.size()),
// and as log_sum_exp.
float token_logprob(std::span<const float> logits, int32_t id);

// One generation step's record: the chosen token and the top n, sharing one normalisation.
struct StepLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;
};
StepLogprobs step_logprobs(std::span<const float> logits, int32_t chosen, size_t n_top);

}  // namespace baton
