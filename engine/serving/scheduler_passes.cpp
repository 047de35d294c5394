#include <algorithm>

#include "engine/runtime/prompt_pieces.h"
#include "engine/serving/scheduler_pass.h"
#include "engine/serving/sequence.h"

namespace baton::serving {

void Scheduler::submit_passes() {
  const int n_free = layers_->max_in_flight() - static_cast<int>(passes_.size());
  if (n_free <= 0) return;
  // Decode tokens first (one per generating sequence, starting one further each step so that
  // a budget smaller than the number of decoders is shared), then prompt pieces, oldest first.
  // Prompts are cut into chunks of n_batch tokens, always at the same places, and go as pieces
  // whose rows carry their chunk's numerics hint; generated tokens go one per pass (also when a
  // rebuilt sequence replays them): a row's numerics depend on the chunk it belongs to
  // (llama.cpp's orders, docs/NUMERICS.md), so a request's result must not depend on what else
  // is running, on the pieces, on a reused prefix or on a rebuild. A piece that does not fit
  // the budget left by the decoders waits, and goes first in the next pass.
  std::vector<ActiveSequence*> decoders;
  std::vector<ActiveSequence*> prefills;
  for (auto& seq : active_)
    if (seq->feedable() && !seq->cancelled()) (seq->prefilling() ? prefills : decoders).push_back(seq.get());
  if (!decoders.empty())
    std::rotate(decoders.begin(), decoders.begin() + (rotation_++ % decoders.size()), decoders.end());
  const bool prefill_first = prefill_deferred_;
  prefill_deferred_ = false;
  if (decoders.empty() && prefills.empty()) return;

  // With a pipeline, the decoders are dealt round-robin into as many micro-batches as may still
  // be in flight, so that every stage has work; a prompt puts its next piece into each of them
  // (its pieces then follow each other through the stages: pipelined prefill).
  const int64_t n_embd = head_.config().n_embd;
  const size_t n_batch = static_cast<size_t>(options_.n_batch);
  // 0: by the prompt's own length (the part computed: a reused prefix is not), fixed for its
  // whole prefill so that its pieces are equal.
  auto prefill_chunk_of = [&](const ActiveSequence& seq) {
    return options_.prefill_chunk > 0
               ? static_cast<size_t>(options_.prefill_chunk)
               : auto_prompt_piece(options_.n_batch, layers_->max_in_flight(), seq.n_prompt() - seq.n_reused());
  };
  const size_t n_decode_groups = std::min(static_cast<size_t>(n_free), decoders.size());
  for (size_t g = 0; g < static_cast<size_t>(n_free); ++g) {
    auto pass = std::make_unique<Pass>();
    size_t budget = n_batch;
    auto add_decoder = [&](ActiveSequence& seq, size_t max_draft, size_t sharing) {
      if (seq.prefilling() || seq.n_unfed() != 1) return false;  // a rebuilt sequence replays one by one
      if (budget == 0) return true;
      auto tokens = seq.next_decode_tokens(std::min(max_draft, budget - 1), sharing);
      for (size_t k = 0; k < tokens.size(); ++k) {
        const size_t pos = static_cast<size_t>(seq.next_position()) + k;
        pass->batch.add(seq.id(), static_cast<int32_t>(pos), true, RowHint{}.encode());
      }
      pass->parts.push_back({&seq, tokens, true, false, true});
      budget -= tokens.size();
      seq.mark_fed(1);  // the draft's rows count once they are kept (accept_verified)
      ++seq.in_flight;
      return true;
    };
    auto add = [&](ActiveSequence& seq) {
      const size_t whole = seq.next_chunk_size(n_batch, prefill_chunk_of(seq));
      if (whole == 0) return;
      if (whole > budget) {
        if (seq.prefilling()) prefill_deferred_ = true;
        return;
      }
      auto chunk = seq.next_chunk(whole);
      const bool output = chunk.size() == seq.n_unfed();
      for (size_t k = 0; k < chunk.size(); ++k) {
        const size_t pos = static_cast<size_t>(seq.next_position()) + k;
        pass->batch.add(seq.id(), static_cast<int32_t>(pos), output && k + 1 == chunk.size(),
                        seq.row_hint(pos, n_batch));
      }
      pass->parts.push_back({&seq, chunk, output, seq.prefilling()});
      budget -= chunk.size();
      seq.mark_fed(chunk.size());  // its next piece (if any) goes into the next pass
      ++seq.in_flight;
    };
    auto add_decoders = [&] {
      if (g >= n_decode_groups) return;
      // Drafts only while few sequences share the pass: beyond that the pass is full of work
      // and draft rows would slow the others down more than they gain.
      const size_t in_group = (decoders.size() - g + n_decode_groups - 1) / n_decode_groups;
      const size_t max_draft = in_group <= static_cast<size_t>(options_.spec_max_decoders) ? SIZE_MAX : 0;
      for (size_t i = g; i < decoders.size(); i += n_decode_groups)
        if (!add_decoder(*decoders[i], max_draft, in_group)) add(*decoders[i]);
    };
    auto add_prefills = [&] {
      for (ActiveSequence* seq : prefills)
        if (budget > 0 && seq->prefilling()) add(*seq);
    };
    if (prefill_first) add_prefills(), add_decoders();
    else add_decoders(), add_prefills();
    if (pass->parts.empty()) break;

    try {
      pass->hidden.resize(pass->batch.size() * static_cast<size_t>(n_embd));
      size_t row = 0;
      for (const auto& part : pass->parts) {
        head_.embed(part.tokens, pass->hidden.data() + row * static_cast<size_t>(n_embd));
        row += part.tokens.size();
      }
      const auto t0 = Clock::now();
      layers_->submit(pass->batch, pass->hidden);
      std::lock_guard lock(mutex_);
      stats_.forward_seconds += scheduler_seconds_since(t0);
    } catch (const std::exception& e) {
      runner_failed(e.what());
      return;
    }
    uint64_t prompt_tokens = 0;
    for (const auto& part : pass->parts)
      if (part.prompt) prompt_tokens += part.tokens.size();
    {
      std::lock_guard lock(mutex_);
      stats_.prompt_tokens += prompt_tokens;
    }
    passes_.push_back(std::move(pass));
  }
}

void Scheduler::finish_oldest_pass() {
  std::unique_ptr<Pass> pass = std::move(passes_.front());
  passes_.pop_front();
  const size_t n_outputs = pass->batch.n_outputs();
  const int64_t n_embd = head_.config().n_embd;
  try {
    const auto t0 = Clock::now();
    layers_->finish(out_rows_);
    {
      std::lock_guard lock(mutex_);
      stats_.forward_seconds += scheduler_seconds_since(t0);
      ++stats_.forward_passes;
    }
    if (out_rows_.size() != n_outputs * static_cast<size_t>(n_embd))
      fail("the layer runner returned {} values for {} output rows of {}", out_rows_.size(), n_outputs, n_embd);
    logits_.resize(n_outputs * static_cast<size_t>(n_vocab_));
    if (n_outputs > 0) head_.logits(out_rows_.data(), static_cast<int64_t>(n_outputs), logits_.data());
  } catch (const std::exception& e) {
    runner_failed(e.what());
    return;
  }

  size_t row = 0;
  for (const auto& part : pass->parts) {
    ActiveSequence& seq = *part.seq;
    --seq.in_flight;
    std::span<const float> logits;
    if (part.output) {
      const size_t rows = part.decode ? part.tokens.size() : 1;
      logits = std::span<const float>(logits_).subspan(row * static_cast<size_t>(n_vocab_),
                                                       rows * static_cast<size_t>(n_vocab_));
      row += rows;
    }
    if (seq.cancelled()) {
      if (seq.in_flight == 0) end(seq, FinishReason::kCancelled);  // its later pieces' passes still name it
      continue;
    }
    if (!part.output) continue;
    bool ended = false;
    size_t generated = 1;
    const SpecCounters before = seq.speculation();
    try {
      if (part.decode) ended = seq.accept_verified(logits, static_cast<size_t>(n_vocab_), generated);
      else ended = seq.accept(logits);
    } catch (const std::exception& e) {
      end(seq, FinishReason::kError, e.what());
      continue;
    }
    {
      std::lock_guard lock(mutex_);
      stats_.generated_tokens += generated;
      stats_.speculation.drafted += seq.speculation().drafted - before.drafted;
      stats_.speculation.accepted += seq.speculation().accepted - before.accepted;
      stats_.speculation.passes += seq.speculation().passes - before.passes;
    }
    if (ended) end(seq, seq.end_reason());
  }
  remove_ended();
}

}  // namespace baton::serving
