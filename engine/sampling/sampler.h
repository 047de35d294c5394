// Token sampling: one row of logits -> one token id, with llama.cpp's default chain
//   logit bias -> penalties -> top_k -> top_p -> min_p -> temperature -> draw.
//
// Design goals: same seed + same calls -> same tokens, on any machine; work close to linear on
// a 150k-entry vocabulary (selection rather than sorting; only the survivors of the filters are
// sorted); the draw is our own and documented, so it does not depend on the standard library's
// distributions.
// Non-goals: grammar, DRY, XTC, mirostat, typical-p (add as further steps of the same chain).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace baton {

// Defaults are llama.cpp's (common_params_sampling).
struct SamplerParams {
  float temperature = 0.8f;        // <= 0: greedy (argmax after penalties, ties -> lowest id)
  int32_t top_k = 40;              // >= 0; 0 = disabled (whole vocabulary)
  float top_p = 0.95f;             // [0, 1]; 1 = disabled; at least one token is always kept
  float min_p = 0.05f;             // [0, 1]; 0 = disabled; keeps p >= min_p * p_max
  float repeat_penalty = 1.0f;     // > 0; 1 = disabled
  int32_t repeat_last_n = 64;      // >= -1; penalized window: 0 = none, -1 = whole history
  float presence_penalty = 0.0f;   // finite; subtracted once from every token in the window
  float frequency_penalty = 0.0f;  // finite; subtracted once per occurrence in the window
  uint32_t seed = 0;               // seeds std::mt19937; pick a random one above if wanted
  // (token id, bias) added to the logits before everything else (llama.cpp's order); a bias of
  // -inf bans the token. Ids >= 0 and finite or -inf biases (validate); ids past the
  // vocabulary are an error of sample().
  std::vector<std::pair<int32_t, float>> logit_bias;
};

// Throws baton::Error naming the first invalid field, its value and the accepted range.
void validate(const SamplerParams& params);

// One surviving candidate of the chain and its probability after temperature.
struct TokenProb {
  int32_t id = 0;
  float p = 0.0f;
};

// Owns the parameters, the random state and a scratch buffer reused across calls.
// Not thread-safe: use one Sampler per sequence.
class Sampler {
 public:
  // Validates `params` (throws baton::Error) and seeds the generator with params.seed.
  explicit Sampler(const SamplerParams& params);

  const SamplerParams& params() const { return params_; }
  // Restarts the random sequence as if the sampler had just been built with `seed`.
  void reseed(uint32_t seed);

  // Picks the next token from `logits` ([n_vocab]). `history` is the sequence so far, oldest
  // first; only its last repeat_last_n tokens are penalized (all when -1).
  // The draw (non-greedy only; greedy consumes no randomness): u = rng() / 2^32 from the
  // mt19937, one call per sample(); walk the surviving candidates in ascending id order
  // accumulating their probabilities (double) and return the first whose running sum exceeds
  // u * total (the last candidate if rounding leaves none).
  // Throws baton::Error on empty logits, a NaN or +inf logit, no finite logit, or a penalized
  // history token or logit_bias id outside [0, n_vocab).
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history);

  // The distribution sample() would draw from, without drawing: the surviving candidates in
  // ascending id order with their probabilities (summing to 1). Greedy gives one entry, p = 1.
  // Same errors as sample(); does not touch the random state.
  std::vector<TokenProb> distribution(std::span<const float> logits, std::span<const int32_t> history);

 private:
  struct Candidate {
    int32_t id;
    float logit;
  };

  // Runs the chain up to (not including) temperature; leaves the survivors in candidates_,
  // sorted by ascending id. Returns the greedy choice instead (>= 0) when temperature <= 0.
  int32_t filter(std::span<const float> logits, std::span<const int32_t> history);
  // Throws naming the first NaN or +inf logit.
  static void check_finite_or_masked(std::span<const float> logits);
  bool penalties_active() const;
  // The lowest id of the largest of x[0, n); -1 when all are -inf.
  static int32_t argmax(const float* x, size_t n);
  void apply_penalties(std::span<const int32_t> history);  // on work_
  // The survivors of top_k among x[0, n) (never a -inf one) into candidates_, in any order.
  void apply_top_k(const float* x, size_t n);
  void apply_top_p_min_p();
  // Probabilities of candidates_ after temperature, into probs_ (same order). Returns their sum.
  double tempered_probs();

  SamplerParams params_;
  std::mt19937 rng_;
  std::vector<float> work_;            // [n_vocab] scratch: the logits after bias and penalties
  std::vector<Candidate> candidates_;  // scratch: the survivors
  std::vector<Candidate> heap_;        // scratch: top_k selection
  std::vector<int32_t> window_;        // scratch: the penalized history, sorted
  std::vector<double> probs_;          // scratch: tempered probabilities of the survivors
};

}  // namespace baton
