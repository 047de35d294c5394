#include "engine/runtime/generator.h"

#include <algorithm>
#include <chrono>

#include "engine/base/error.h"
#include "engine/model/row_hint.h"
#include "engine/runtime/draft_model.h"
#include "engine/runtime/prompt_runner.h"

namespace baton {
namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

void Generator::run_tokens(uint64_t seq_id, std::span<const int32_t> tokens, int32_t pos0, bool want_logits) {
  const int64_t n_embd = head_.config().n_embd;
  batch_.clear();
  for (size_t i = 0; i < tokens.size(); ++i)
    batch_.add(seq_id, pos0 + static_cast<int32_t>(i), want_logits && i + 1 == tokens.size());
  hidden_.resize(tokens.size() * static_cast<size_t>(n_embd));
  head_.embed(tokens, hidden_.data());
  layers_.forward(batch_, hidden_, out_rows_);
  if (want_logits) {
    logits_.resize(static_cast<size_t>(head_.n_vocab()));
    head_.logits(out_rows_.data(), 1, logits_.data());
  }
}

void Generator::run_verification(uint64_t seq_id, std::span<const int32_t> tokens, int32_t pos0) {
  const int64_t n_embd = head_.config().n_embd;
  batch_.clear();
  for (size_t i = 0; i < tokens.size(); ++i)
    batch_.add(seq_id, pos0 + static_cast<int32_t>(i), true, RowHint{}.encode());
  hidden_.resize(tokens.size() * static_cast<size_t>(n_embd));
  head_.embed(tokens, hidden_.data());
  layers_.forward(batch_, hidden_, out_rows_);
  logits_.resize(tokens.size() * static_cast<size_t>(head_.n_vocab()));
  head_.logits(out_rows_.data(), static_cast<int64_t>(tokens.size()), logits_.data());
}

void Generator::run_prompt(uint64_t seq_id, std::span<const int32_t> prompt, const GenerateOptions& options) {
  PromptCut cut;
  cut.n_batch = static_cast<size_t>(options.n_batch);
  cut.prefill_chunk = options.prefill_chunk > 0 ? static_cast<size_t>(options.prefill_chunk) : 0;
  run_prompt_pieces(head_, layers_, seq_id, prompt, 0, cut, out_rows_, options.on_prompt_progress);
  logits_.resize(static_cast<size_t>(head_.n_vocab()));
  head_.logits(out_rows_.data(), 1, logits_.data());
}

GenerationResult Generator::generate(uint64_t seq_id, std::span<const int32_t> prompt, const GenerateOptions& options,
                                     const std::function<bool(const GeneratedStep&)>& on_step) {
  const int64_t n_ctx = layers_.n_ctx();
  if (prompt.empty()) fail("the prompt is empty: nothing to continue");
  if (static_cast<int64_t>(prompt.size()) >= n_ctx)
    fail("the prompt has {} tokens but the context holds {} (at least one must be left to generate)", prompt.size(),
         n_ctx);
  if (options.n_batch <= 0) fail("n_batch must be positive (got {})", options.n_batch);

  GenerationResult result;
  Sampler sampler(options.sampling);
  std::vector<int32_t> history(prompt.begin(), prompt.end());
  layers_.reset_sequence(seq_id);

  auto t0 = std::chrono::steady_clock::now();
  run_prompt(seq_id, prompt, options);
  result.prompt_seconds = seconds_since(t0);

  auto t1 = std::chrono::steady_clock::now();
  result.finish_reason = FinishReason::kLength;
  const SpecParams& spec = options.speculation;
  if (spec.enabled()) spec.validate();
  if (spec.enabled() && spec.mode == SpecMode::kDraft && !options.draft_model)
    fail("speculation mode 'draft' needs a draft model (--model-draft)");
  DraftPolicy policy(spec.draft_max, spec.adapt);
  double trip_seconds = -1;  // the last trip's wall time
  const size_t n_vocab = static_cast<size_t>(head_.n_vocab());
  std::vector<int32_t> verify;  // the last pass's tokens: a generated token and its draft
  size_t row = 0;               // the row of logits_ the next token is sampled from
  size_t kept = 0;              // draft tokens of the last pass sampled so far
  auto close_draft = [&] {
    if (verify.empty()) return;
    if (verify.size() > 1) {
      result.speculation.drafted += verify.size() - 1;
      result.speculation.accepted += kept;
      ++result.speculation.passes;
    }
    policy.record(verify.size(), kept, trip_seconds);
  };
  for (int32_t i = 0; options.n_predict < 0 || i < options.n_predict; ++i) {
    const std::span<const float> logits(logits_.data() + row * n_vocab, n_vocab);
    GeneratedStep step;
    step.token = sampler.sample(logits, history);
    if (options.n_top_logprobs > 0) {
      StepLogprobs lp = step_logprobs(logits, step.token, options.n_top_logprobs);
      step.logprob = lp.chosen.logprob;
      step.top = std::move(lp.top);
    }
    history.push_back(step.token);
    bool eog = options.is_end_of_generation && options.is_end_of_generation(step.token);
    result.steps.push_back(step);
    if (on_step && !on_step(result.steps.back())) {
      result.finish_reason = FinishReason::kStop;
      break;
    }
    if (eog) {
      result.finish_reason = FinishReason::kStop;
      break;
    }
    bool last = options.n_predict >= 0 && i + 1 == options.n_predict;
    if (last) break;
    if (static_cast<int64_t>(history.size()) >= n_ctx) break;  // context full: "length"
    // The draft's next row was computed after exactly these tokens: it gives the next step.
    if (row + 1 < verify.size() && step.token == verify[row + 1]) {
      ++row, ++kept;
      continue;
    }
    close_draft();
    const auto trip_start = std::chrono::steady_clock::now();  // drafting is part of the trip
    const int32_t pos = static_cast<int32_t>(history.size() - 1);
    verify.assign(1, step.token);
    if (spec.enabled()) {
      const int64_t remaining = options.n_predict < 0 ? -1 : options.n_predict - (i + 1);
      const size_t k = std::min(policy.limit(), draft_room(n_ctx, static_cast<size_t>(pos), remaining));
      const auto draft = propose_draft(spec, options.draft_model, seq_id, history, k);
      verify.insert(verify.end(), draft.begin(), draft.end());
    }
    row = 0, kept = 0;
    ++result.decode_passes;
    if (verify.size() == 1) run_tokens(seq_id, verify, pos, true);
    else run_verification(seq_id, verify, pos);
    trip_seconds = seconds_since(trip_start);
  }
  close_draft();
  result.generation_seconds = seconds_since(t1);
  if (options.draft_model) options.draft_model->forget(seq_id);
  layers_.reset_sequence(seq_id);
  return result;
}

}  // namespace baton
