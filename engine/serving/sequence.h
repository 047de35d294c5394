// One admitted request while it is being generated: its tokens (prompt, then generated), its
// own Sampler, streaming detokenizer and stop matcher, how far the runner has got, and its
// timings. It turns the logits of its last token into one published TokenEvent and decides
// when it ends. Owned and used by the scheduler thread only.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/grammar/token_constraint.h"
#include "engine/sampling/sampler.h"
#include "engine/serving/scheduler.h"
#include "engine/serving/stop_matcher.h"
#include "engine/tokenizer/tokenizer.h"

namespace baton::serving {

class ActiveSequence {
 public:
  using Clock = std::chrono::steady_clock;

  // `request` must have been validated (Scheduler::submit). The runner already holds this
  // sequence id's KV of the prompt's first `reused` tokens (a prefix-cache hit; else 0).
  ActiveSequence(uint64_t id, std::shared_ptr<RequestHandle> handle, CompletionRequest request,
                 const tokenizer::Tokenizer& tokenizer, int64_t n_ctx, Clock::time_point submitted, size_t reused = 0,
                 const SpecParams& speculation = {.mode = SpecMode::kOff}, DraftModel* draft_model = nullptr);

  uint64_t id() const { return id_; }
  RequestHandle& handle() { return *handle_; }
  bool cancelled() const { return handle_->cancelled(); }
  bool ended() const { return ended_; }

  // Feeding the runner: tokens_[n_fed_, size) have not been through a forward pass yet (the
  // unfed part of the prompt, or the one token sampled last).
  bool prefilling() const { return n_fed_ < n_prompt_; }
  size_t n_unfed() const { return tokens_.size() - n_fed_; }
  // How many tokens the next pass takes: the prompt in pieces of at most `prefill_chunk` tokens
  // within its chunks of `n_batch` from position 0, each generated token alone (also when a
  // rebuilt sequence replays them). With row_hint() every token is computed exactly as in an
  // uninterrupted run from scratch (engine/runtime/prompt_pieces.h).
  size_t next_chunk_size(size_t n_batch, size_t prefill_chunk) const;
  // The tokens of this sequence's next decoding pass: its one unfed token followed by an n-gram
  // draft of at most max_draft tokens when speculation is on and a draft is found (all rows
  // want logits, each computed with the single-row numerics). Call only when !prefilling() and
  // n_unfed() == 1. The span stays valid until the pass has been finished (accept_verified).
  // `sharing`: the decoders in that pass (a draft row slows each of them).
  std::span<const int32_t> next_decode_tokens(size_t max_draft, size_t sharing = 1);
  // The numerics hint of the token at `pos` (a prompt row: its chunk's; a generated one: alone).
  uint8_t row_hint(size_t pos, size_t n_batch) const;
  // The next up to `max` unfed tokens and the position of the first of them.
  std::span<const int32_t> next_chunk(size_t max) const;
  int32_t next_position() const { return static_cast<int32_t>(n_fed_); }
  // `n` tokens went into a submitted pass (in_flight is set by the caller).
  void mark_fed(size_t n);
  // The runner lost this sequence's KV cache: every token (prompt + generated so far) is fed
  // again from position 0 (in the same chunks as the first time: the KV cache is rebuilt bit for
  // bit), and the last one's logits give the next token as before.
  void rewind() { n_fed_ = 0, n_reused_ = 0; }
  // Passes holding some of its tokens and not finished yet. Several only while its prompt is
  // being fed (pipelined prefill: its pieces follow each other through the stages in order).
  int in_flight = 0;
  // Can take tokens into the next pass: prompt pieces whatever is in flight, a generated
  // token once the pass that produces it has finished.
  bool feedable() const { return !ended_ && n_unfed() > 0 && (prefilling() || in_flight == 0); }
  // The tokens whose KV this sequence's slot holds bit for bit as a run from scratch would
  // compute them (the prompt's reusable prefix, as far as it was fed), for the prefix cache.
  std::vector<int32_t> reusable_tokens(size_t n_batch) const;
  size_t n_reused() const { return n_reused_; }
  bool cache_prompt() const { return request_.cache_prompt; }

  // Samples the next token from `logits` ([n_vocab], of the last token fed), publishes its
  // event and returns true when this token ended the sequence (then the summary is set but not
  // yet published: see finish()). Throws baton::Error from the sampler or the detokenizer.
  bool accept(std::span<const float> logits);
  // The logits of a decoding pass from next_decode_tokens() ([rows, n_vocab]): samples row 0,
  // then row i + 1 as long as the token sampled from row i equals draft token i (its row was
  // computed after exactly the right tokens), and keeps the KV of the kept draft tokens.
  // Returns whether the sequence ended (as accept()) and counts the tokens it generated.
  bool accept_verified(std::span<const float> logits, size_t n_vocab, size_t& generated);
  const SpecCounters& speculation() const { return spec_counters_; }
  // The reason accept() ended the sequence (kStop or kLength; kNone while it goes on).
  FinishReason end_reason() const { return end_reason_; }
  // Publishes the summary with `reason` (and for kError `error` and its kind); idempotent.
  void finish(FinishReason reason, const std::string& error = {}, ErrorKind kind = ErrorKind::kNone);

  size_t n_prompt() const { return n_prompt_; }
  size_t n_generated() const { return n_generated_; }

 private:
  uint64_t id_;
  std::shared_ptr<RequestHandle> handle_;
  CompletionRequest request_;
  const tokenizer::Tokenizer& tokenizer_;
  int64_t n_ctx_;
  Sampler sampler_;
  tokenizer::StreamDetokenizer detokenizer_;
  StopMatcher stop_;
  std::optional<grammar::TokenConstraint> constraint_;  // when the request has a grammar
  std::vector<float> masked_;                           // scratch: the logits after the grammar mask
  SpecParams spec_;                                     // the server's, with the request's overrides
  DraftModel* draft_model_ = nullptr;                   // SpecMode::kDraft's drafts
  DraftPolicy draft_policy_;
  std::vector<int32_t> verify_;  // the unfed token + its draft, while in flight
  SpecCounters spec_counters_;

  std::vector<int32_t> tokens_;  // prompt, then generated tokens
  size_t n_prompt_ = 0;
  size_t n_fed_ = 0;
  size_t n_reused_ = 0;
  size_t n_generated_ = 0;
  bool ended_ = false;
  FinishReason end_reason_ = FinishReason::kNone;

  Clock::time_point submitted_, first_pass_, first_token_, last_token_;
  bool started_ = false;
};

}  // namespace baton::serving
