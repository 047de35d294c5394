#include "engine/serving/sequence.h"

#include <algorithm>
#include <cmath>

#include "engine/runtime/draft_model.h"
#include "engine/runtime/prompt_pieces.h"
#include "engine/sampling/logprobs.h"

namespace baton::serving {
namespace {
double seconds(ActiveSequence::Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

ActiveSequence::ActiveSequence(uint64_t id, std::shared_ptr<RequestHandle> handle, CompletionRequest request,
                               const tokenizer::Tokenizer& tokenizer, int64_t n_ctx, Clock::time_point submitted,
                               size_t reused, const SpecParams& speculation, DraftModel* draft_model)
    : id_(id),
      handle_(std::move(handle)),
      request_(std::move(request)),
      tokenizer_(tokenizer),
      n_ctx_(n_ctx),
      sampler_(request_.sampling),
      detokenizer_(tokenizer),
      stop_(request_.stop),
      spec_(speculation),
      draft_model_(draft_model),
      draft_policy_(speculation.draft_max, speculation.adapt),
      tokens_(request_.prompt),
      n_prompt_(request_.prompt.size()),
      n_fed_(reused),
      n_reused_(reused),
      submitted_(submitted) {
  if (request_.constraint) constraint_.emplace(request_.constraint);
  request_.prompt.clear();
  request_.prompt.shrink_to_fit();
}

size_t ActiveSequence::next_chunk_size(size_t n_batch, size_t prefill_chunk) const {
  if (!prefilling()) return std::min<size_t>(1, n_unfed());
  return next_prompt_piece(n_prompt_, n_fed_, n_batch, prefill_chunk);
}

uint8_t ActiveSequence::row_hint(size_t pos, size_t n_batch) const {
  return (pos < n_prompt_ ? prompt_row_hint(n_prompt_, pos, n_batch) : RowHint{}).encode();
}

std::vector<int32_t> ActiveSequence::reusable_tokens(size_t n_batch) const {
  const size_t n = std::min(reusable_prefix(n_prompt_, n_batch), n_fed_);
  return std::vector<int32_t>(tokens_.begin(), tokens_.begin() + static_cast<ptrdiff_t>(n));
}

std::span<const int32_t> ActiveSequence::next_decode_tokens(size_t max_draft, size_t sharing) {
  verify_.assign(1, tokens_[n_fed_]);
  if (!spec_.enabled() || n_unfed() != 1) return verify_;
  const int64_t remaining = request_.max_tokens < 0 ? -1 : request_.max_tokens - static_cast<int64_t>(n_generated_);
  const size_t k = std::min({draft_policy_.limit(sharing), max_draft, draft_room(n_ctx_, n_fed_, remaining)});
  const auto draft = propose_draft(spec_, draft_model_, id_, tokens_, k);
  verify_.insert(verify_.end(), draft.begin(), draft.end());
  return verify_;
}

bool ActiveSequence::accept_verified(std::span<const float> logits, size_t n_vocab, size_t& generated) {
  const size_t rows = verify_.size();
  // One trip of this sequence: from its last token (the end of its previous trip) to now.
  const double trip_seconds = n_generated_ > 0 ? seconds(Clock::now() - last_token_) : -1;
  size_t kept = 0;
  bool ended = false;
  generated = 0;
  for (size_t i = 0; i < rows; ++i) {
    ended = accept(logits.subspan(i * n_vocab, n_vocab));
    ++generated;
    if (ended || i + 1 == rows || tokens_.back() != verify_[i + 1]) break;
    ++kept;  // draft token i + 1 was sampled: its row's logits are the next step's
  }
  n_fed_ += kept;  // their KV rows are the sequence's; rejected rows lie past its end
  if (rows > 1) {
    spec_counters_.drafted += rows - 1;
    spec_counters_.accepted += kept;
    ++spec_counters_.passes;
  }
  draft_policy_.record(rows, kept, trip_seconds);
  return ended;
}

std::span<const int32_t> ActiveSequence::next_chunk(size_t max) const {
  return std::span<const int32_t>(tokens_).subspan(n_fed_, std::min(max, n_unfed()));
}

void ActiveSequence::mark_fed(size_t n) {
  if (!started_) {
    started_ = true;
    first_pass_ = Clock::now();
  }
  n_fed_ += n;
}

bool ActiveSequence::accept(std::span<const float> logits) {
  TokenEvent event;
  // Under a grammar the sampler and the log-probabilities see the masked row: the chosen
  // token's logprob is its probability among the tokens the grammar allows.
  if (constraint_) {
    masked_.assign(logits.begin(), logits.end());
    constraint_->apply(masked_);
    logits = masked_;
  }
  event.token = sampler_.sample(logits, tokens_);
  if (constraint_) constraint_->accept(event.token);
  if (request_.logprobs || request_.n_top_logprobs > 0) {
    StepLogprobs lp = step_logprobs(logits, event.token, request_.n_top_logprobs);
    event.logprob = lp.chosen.logprob;
    event.top = std::move(lp.top);
    // Tokens the grammar rules out (-inf) are not candidates: a step with fewer allowed tokens
    // than asked lists fewer.
    if (constraint_) std::erase_if(event.top, [](const TokenLogprob& t) { return std::isinf(t.logprob); });
  }
  tokens_.push_back(event.token);
  ++n_generated_;
  last_token_ = Clock::now();
  if (n_generated_ == 1) first_token_ = last_token_;

  // The text this token releases. An end-of-generation token adds no text of its own; at the
  // end of the stream whatever the detokenizer and the stop matcher still hold is released.
  const bool eog = !request_.ignore_eos && tokenizer_.is_eog(event.token);
  const bool length = (request_.max_tokens >= 0 && n_generated_ >= static_cast<size_t>(request_.max_tokens)) ||
                      static_cast<int64_t>(tokens_.size()) >= n_ctx_;
  if (!eog) event.text = stop_.push(detokenizer_.push(event.token));
  if (!stop_.stopped() && (eog || length)) {
    event.text += stop_.push(detokenizer_.flush());
    if (!stop_.stopped()) event.text += stop_.flush();
  }
  // A grammar whose sentence is complete allows nothing but the end: stop without asking.
  const bool grammar_done = constraint_ && !eog && constraint_->complete();
  if (grammar_done && !stop_.stopped() && !length) {
    event.text += stop_.push(detokenizer_.flush());
    if (!stop_.stopped()) event.text += stop_.flush();
  }
  if (stop_.stopped() || eog || grammar_done) end_reason_ = FinishReason::kStop;
  else if (length) end_reason_ = FinishReason::kLength;
  handle_->publish(std::move(event));
  return end_reason_ != FinishReason::kNone;
}

void ActiveSequence::finish(FinishReason reason, const std::string& error, ErrorKind kind) {
  if (ended_) return;
  ended_ = true;
  CompletionSummary summary;
  summary.finish_reason = reason;
  summary.error_kind = reason == FinishReason::kError ? kind : ErrorKind::kNone;
  summary.error = error;
  summary.prompt_tokens = n_prompt_;
  summary.cached_tokens = n_reused_;
  summary.completion_tokens = n_generated_;
  summary.speculation = spec_counters_;
  const auto now = Clock::now();
  summary.queue_seconds = seconds((started_ ? first_pass_ : now) - submitted_);
  if (n_generated_ > 0) {
    summary.time_to_first_token = seconds(first_token_ - submitted_);
    summary.generation_seconds = seconds(last_token_ - first_token_);
  }
  handle_->complete(std::move(summary));
}

}  // namespace baton::serving
