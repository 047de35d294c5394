// Generates one sequence: prompt processing in batches, then one token per step, sampling
// from the logits of the output head. Works with any LayerRunner (local or a cluster).
// Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/model/model_head.h"
#include "engine/runtime/finish_reason.h"
#include "engine/runtime/layer_runner.h"
#include "engine/runtime/speculation.h"
#include "engine/sampling/logprobs.h"
#include "engine/sampling/sampler.h"

namespace baton {

class DraftModel;  // engine/runtime/draft_model.h

struct GenerateOptions {
  int32_t n_predict = 64;  // < 0: until end of generation or the context is full
  SamplerParams sampling;
  size_t n_top_logprobs = 0;  // per step, of the raw distribution
  int32_t n_batch = 512;      // prompt tokens per chunk (the numerics' cut, engine/runtime/prompt_pieces.h)
  // Prompt tokens per pass when a chunk is sent as pieces (same bits); <= 0: automatic
  // (auto_prompt_piece(): small pieces when the runner keeps several passes in flight).
  int32_t prefill_chunk = 0;
  std::function<bool(int32_t)> is_end_of_generation;                  // may be empty
  std::function<void(size_t done, size_t total)> on_prompt_progress;  // prompt tokens done; may be empty
  // Speculative decoding by n-gram lookup (engine/runtime/speculation.h): the same tokens and
  // log-probabilities, fewer passes when the text repeats. Off unless asked for.
  SpecParams speculation{.mode = SpecMode::kOff};
  DraftModel* draft_model = nullptr;  // required by SpecMode::kDraft; not owned
};

struct GeneratedStep {
  int32_t token = 0;
  float logprob = 0.0f;  // set when n_top_logprobs > 0
  std::vector<TokenLogprob> top;
};

struct GenerationResult {
  std::vector<GeneratedStep> steps;
  FinishReason finish_reason = FinishReason::kNone;  // kStop (end of generation / callback) or kLength
  double prompt_seconds = 0;
  double generation_seconds = 0;  // from the first to the last generated token
  SpecCounters speculation;       // draft tokens proposed and kept
  size_t decode_passes = 0;       // passes after the prompt (one per token without drafts)
};

class Generator {
 public:
  Generator(ModelHead& head, LayerRunner& layers) : head_(head), layers_(layers) {}

  // on_step is called after each token; returning false stops (finish_reason "stop").
  // Throws baton::Error when the prompt is empty or does not fit the context.
  GenerationResult generate(uint64_t seq_id, std::span<const int32_t> prompt, const GenerateOptions& options,
                            const std::function<bool(const GeneratedStep&)>& on_step = {});

 private:
  // Runs tokens [begin, end) of `tokens` at positions from `pos0`; logits of the last token.
  void run_tokens(uint64_t seq_id, std::span<const int32_t> tokens, int32_t pos0, bool want_logits);
  // A generated token and its draft at positions from `pos0`, every row computed as a pass of
  // its own would compute it; logits of every row.
  void run_verification(uint64_t seq_id, std::span<const int32_t> tokens, int32_t pos0);
  // The prompt in pieces, as many in flight as the runner allows (pipelined prefill); leaves
  // the last token's logits in logits_.
  void run_prompt(uint64_t seq_id, std::span<const int32_t> prompt, const GenerateOptions& options);

  ModelHead& head_;
  LayerRunner& layers_;
  TokenBatch batch_;
  std::vector<float> hidden_, out_rows_, logits_;
};

}  // namespace baton
