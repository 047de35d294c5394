#include "engine/serving/scheduler.h"

#include <algorithm>
#include <cstdint>
#include <future>

#include "engine/runtime/draft_model.h"
#include "engine/runtime/prompt_pieces.h"
#include "engine/serving/sequence.h"

namespace baton::serving {

// One micro-batch handed to the runner and not finished yet. The batch and the embeddings stay
// alive (at a fixed address) until finish(), whatever the runner does with them.
struct Scheduler::Pass {
  struct Part {
    ActiveSequence* seq;
    std::span<const int32_t> tokens;  // the sequence's tokens in this pass
    bool output;                      // its last token's row is wanted (prompt done / decode)
    bool prompt;                      // tokens of its prompt
    bool decode = false;              // a generated token and its draft: every row is an output
  };
  TokenBatch batch;
  std::vector<float> hidden;  // [batch.size(), n_embd]
  std::vector<Part> parts;    // in batch order
};

// run_exclusive()'s task, handed to the scheduler thread.
struct Scheduler::Exclusive {
  const std::function<bool()>* fn;
  std::promise<bool> done;
};

namespace {
constexpr size_t kMaxTopLogprobs = 20;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Scheduler::Scheduler(ModelHead& head, LayerRunner& layers, const tokenizer::Tokenizer& tokenizer,
                     const SchedulerOptions& options)
    : head_(head), layers_(layers), tokenizer_(tokenizer), options_(options) {
  if (options_.slots < 1) fail("SchedulerOptions::slots must be at least 1 (got {})", options_.slots);
  if (options_.queue_limit < 0)
    fail("SchedulerOptions::queue_limit must not be negative (got {})", options_.queue_limit);
  if (options_.n_batch < 1) fail("SchedulerOptions::n_batch must be at least 1 (got {})", options_.n_batch);
  if (options_.prefill_chunk < 0)
    fail("SchedulerOptions::prefill_chunk must not be negative (got {})", options_.prefill_chunk);
  options_.speculation.validate();
  if (options_.speculation.enabled() && options_.speculation.mode == SpecMode::kDraft && !options_.draft_model)
    fail("speculation mode 'draft' needs a draft model (--model-draft)");
  if (options_.spec_max_decoders < 0)
    fail("SchedulerOptions::spec_max_decoders must not be negative (got {})", options_.spec_max_decoders);
  if (layers_.max_in_flight() < 1)
    fail("the layer runner allows {} passes in flight; it must allow at least 1", layers_.max_in_flight());
  n_ctx_ = layers_.n_ctx();
  n_vocab_ = head_.n_vocab();
  thread_ = std::thread([this] { run(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

int64_t Scheduler::n_ctx() const { return n_ctx_; }

SpecParams Scheduler::speculation_for(const CompletionRequest& request) const {
  SpecParams spec = options_.speculation;
  if (request.draft_max >= 0) spec.draft_max = request.draft_max;
  if (request.draft_min >= 0) spec.draft_min = request.draft_min;
  if (request.draft_max >= 0 && request.draft_min < 0) spec.draft_min = std::min(spec.draft_min, spec.draft_max);
  return spec;
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard lock(mutex_);
  SchedulerStats stats = stats_;
  stats.queued = static_cast<int>(queue_.size());
  return stats;
}

std::shared_ptr<RequestHandle> Scheduler::submit(CompletionRequest request) {
  if (options_.n_predict > 0 && (request.max_tokens < 0 || request.max_tokens > options_.n_predict))
    request.max_tokens = options_.n_predict;
  if (request.prompt.empty()) fail("the prompt is empty: nothing to continue");
  if (static_cast<int64_t>(request.prompt.size()) >= n_ctx_)
    fail("the prompt has {} tokens but the context holds {} (at least one must be left to generate)",
         request.prompt.size(), n_ctx_);
  for (size_t i = 0; i < request.prompt.size(); ++i)
    if (request.prompt[i] < 0 || request.prompt[i] >= n_vocab_)
      fail("prompt token {} is {}, outside the vocabulary of {} tokens", i, request.prompt[i], n_vocab_);
  validate(request.sampling);
  speculation_for(request).validate();
  if (request.n_top_logprobs > kMaxTopLogprobs)
    fail("n_top_logprobs is {}; at most {} are supported", request.n_top_logprobs, kMaxTopLogprobs);

  auto handle = std::make_shared<RequestHandle>();
  {
    std::lock_guard lock(mutex_);
    if (stopping_) fail("the server is shutting down");
    if (!unavailable_.empty()) fail<UnavailableError>("{}", unavailable_);
    const size_t running = static_cast<size_t>(stats_.active), waiting = queue_.size();
    if (running + waiting >= static_cast<size_t>(options_.slots) + static_cast<size_t>(options_.queue_limit)) {
      ++stats_.rejected;
      fail<OverloadedError>("server overloaded: {} requests running and {} waiting (limits {} slots, {} queued)",
                            running, waiting, options_.slots, options_.queue_limit);
    }
    queue_.push_back(Queued{handle, std::move(request), Clock::now()});
    ++stats_.requests;
    stats_.queued = static_cast<int>(queue_.size());
  }
  wake_.notify_all();
  return handle;
}

void Scheduler::set_runner_repair(RunnerRepair repair) {
  std::lock_guard lock(mutex_);
  repair_ = std::move(repair);
}

void Scheduler::set_unavailable(const std::string& reason) {
  std::lock_guard lock(mutex_);
  unavailable_ = reason;
}

bool Scheduler::run_exclusive(const std::function<bool()>& fn) {
  if (std::this_thread::get_id() == thread_.get_id()) fail("Scheduler::run_exclusive called on the scheduler thread");
  Exclusive task{&fn, {}};
  auto result = task.done.get_future();
  {
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [&] { return stopping_ || exclusive_ == nullptr; });
    if (stopping_) fail("the server is shutting down");
    exclusive_ = &task;
  }
  wake_.notify_all();
  return result.get();  // shut_down() fails a task it did not run
}

void Scheduler::run_exclusive_task() {
  while (!passes_.empty()) finish_oldest_pass();  // new passes wait; a failure clears them
  Exclusive* task = nullptr;
  {
    std::lock_guard lock(mutex_);
    task = exclusive_;
  }
  try {
    const bool lost = (*task->fn)();
    if (lost) rebuild_active();
    task->done.set_value(lost);
  } catch (...) {
    task->done.set_exception(std::current_exception());
  }
  {
    std::lock_guard lock(mutex_);
    exclusive_ = nullptr;
  }
  wake_.notify_all();
}

void Scheduler::run() {
  for (;;) {
    bool exclusive = false;
    {
      std::unique_lock lock(mutex_);
      if (active_.empty() && passes_.empty())
        wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || exclusive_ != nullptr; });
      if (stopping_) break;
      exclusive = exclusive_ != nullptr;
    }
    if (exclusive) {
      run_exclusive_task();
      continue;
    }
    admit();
    drop_cancelled();
    submit_passes();
    if (!passes_.empty()) finish_oldest_pass();
  }
  shut_down();
}

void Scheduler::admit() {
  std::vector<Queued> taken, cancelled;
  {
    std::lock_guard lock(mutex_);
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (it->handle->cancelled()) {
        cancelled.push_back(std::move(*it));
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
    while (!queue_.empty() && active_.size() + taken.size() < static_cast<size_t>(options_.slots)) {
      taken.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    stats_.queued = static_cast<int>(queue_.size());
    stats_.active += static_cast<int>(taken.size());
  }
  for (auto& q : cancelled) {
    CompletionSummary summary;
    summary.finish_reason = FinishReason::kCancelled;
    summary.prompt_tokens = q.request.prompt.size();
    summary.queue_seconds = seconds_since(q.submitted);
    q.handle->complete(std::move(summary));
  }
  for (auto& q : taken) {
    const bool nothing_to_generate = q.request.max_tokens == 0;
    active_.push_back(start_sequence(q));
    if (nothing_to_generate) end(*active_.back(), FinishReason::kLength);
  }
  remove_ended();
  publish_cache_stats();
}

std::unique_ptr<ActiveSequence> Scheduler::start_sequence(Queued& q) {
  const size_t n_batch = static_cast<size_t>(options_.n_batch);
  std::optional<PrefixCache::Hit> hit;
  if (options_.cache_prompt && q.request.cache_prompt && q.request.max_tokens != 0)
    hit = prefix_cache_.take(q.request.prompt, n_batch);
  if (hit) {
    std::lock_guard lock(mutex_);
    stats_.cached_prompt_tokens += hit->start;
    ++stats_.cache_hits;
  } else {
    // A fresh slot: the runner holds options_.slots sequences, active or cached.
    while (prefix_cache_.size() > 0 &&
           active_.size() + 1 + prefix_cache_.size() > static_cast<size_t>(options_.slots)) {
      const uint64_t evicted = *prefix_cache_.evict_oldest();
      try {
        layers_.reset_sequence(evicted);
      } catch (const std::exception&) {
        // A runner that cannot reach its cache has lost it anyway; the id is never reused.
      }
    }
  }
  const SpecParams spec = speculation_for(q.request);
  return std::make_unique<ActiveSequence>(hit ? hit->seq_id : next_seq_id_++, q.handle, std::move(q.request),
                                          tokenizer_, n_ctx_, q.submitted, hit ? hit->start : 0, spec,
                                          options_.draft_model);
}

void Scheduler::forget_cached_prefixes() {
  // Their KV is lost or about to be; a runner that still holds it frees the slots.
  for (uint64_t id : prefix_cache_.clear()) {
    try {
      layers_.reset_sequence(id);
    } catch (const std::exception&) {
    }
  }
  publish_cache_stats();
}

void Scheduler::publish_cache_stats() {
  std::lock_guard lock(mutex_);
  stats_.cache_entries = static_cast<int>(prefix_cache_.size());
  stats_.cache_positions = prefix_cache_.tokens();
}

void Scheduler::drop_cancelled() {
  for (auto& seq : active_)
    if (seq->in_flight == 0 && seq->cancelled()) end(*seq, FinishReason::kCancelled);
  remove_ended();
}

void Scheduler::submit_passes() {
  const int n_free = layers_.max_in_flight() - static_cast<int>(passes_.size());
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
  const size_t prefill_chunk = options_.prefill_chunk > 0
                                   ? static_cast<size_t>(options_.prefill_chunk)
                                   : auto_prompt_piece(options_.n_batch, layers_.max_in_flight());
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
      const size_t whole = seq.next_chunk_size(n_batch, prefill_chunk);
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
      layers_.submit(pass->batch, pass->hidden);
      std::lock_guard lock(mutex_);
      stats_.forward_seconds += seconds_since(t0);
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
    layers_.finish(out_rows_);
    {
      std::lock_guard lock(mutex_);
      stats_.forward_seconds += seconds_since(t0);
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

void Scheduler::end(ActiveSequence& seq, FinishReason reason, const std::string& error, ErrorKind kind) {
  if (seq.ended()) return;
  // Cache and stats first: whoever sees the request done sees its slot free (or holding a
  // prefix for the next request).
  std::vector<int32_t> reusable;
  if (options_.cache_prompt && seq.cache_prompt() && reason != FinishReason::kError && seq.in_flight == 0)
    reusable = seq.reusable_tokens(static_cast<size_t>(options_.n_batch));
  if (!reusable.empty()) {
    prefix_cache_.put(seq.id(), std::move(reusable));
  } else {
    try {
      layers_.reset_sequence(seq.id());
    } catch (const std::exception&) {
      // A runner that cannot reach its cache has lost it anyway; the id is never reused.
    }
  }
  publish_cache_stats();
  if (options_.draft_model) options_.draft_model->forget(seq.id());
  {
    std::lock_guard lock(mutex_);
    --stats_.active;
    if (reason == FinishReason::kError) ++stats_.failed;
  }
  seq.finish(reason, error, kind);
}

void Scheduler::fail_all(const std::string& error) {
  passes_.clear();  // after a failure every unfinished pass is lost
  forget_cached_prefixes();
  for (auto& seq : active_) {
    seq->in_flight = 0;
    end(*seq, FinishReason::kError, error);
  }
  remove_ended();
}

void Scheduler::runner_failed(const std::string& error) {
  passes_.clear();  // after a failure every unfinished pass is lost
  for (auto& seq : active_) seq->in_flight = 0;
  RunnerRepair repair;
  {
    std::lock_guard lock(mutex_);
    repair = repair_;
  }
  std::string message = error;
  if (repair && !active_.empty()) {
    try {
      if (repair(error)) {
        rebuild_active();
        return;
      }
    } catch (const std::exception& e) {
      message = e.what();
    }
  }
  fail_all(message);
}

void Scheduler::rebuild_active() {
  passes_.clear();
  forget_cached_prefixes();  // the runner's caches are new
  for (auto& seq : active_) {
    seq->in_flight = 0;
    seq->rewind();
  }
  std::lock_guard lock(mutex_);
  stats_.resumed += active_.size();
}

void Scheduler::remove_ended() {
  std::erase_if(active_, [](const std::unique_ptr<ActiveSequence>& seq) { return seq->ended(); });
}

void Scheduler::shut_down() {
  const std::string message = "server shutting down";
  // Let the runner complete what it holds, so it is left without unfinished passes.
  while (!passes_.empty()) {
    try {
      layers_.finish(out_rows_);
    } catch (const std::exception&) {
      passes_.clear();
      break;
    }
    passes_.pop_front();
  }
  for (auto& seq : active_) {
    seq->in_flight = 0;
    end(*seq, FinishReason::kError, message, ErrorKind::kShuttingDown);
  }
  remove_ended();
  forget_cached_prefixes();
  std::deque<Queued> queued;
  {
    std::lock_guard lock(mutex_);
    queued.swap(queue_);
    stats_.queued = 0;
    stats_.failed += queued.size();
  }
  for (auto& q : queued) {
    CompletionSummary summary;
    summary.finish_reason = FinishReason::kError;
    summary.error_kind = ErrorKind::kShuttingDown;
    summary.error = message;
    summary.prompt_tokens = q.request.prompt.size();
    summary.queue_seconds = seconds_since(q.submitted);
    q.handle->complete(std::move(summary));
  }
  std::lock_guard lock(mutex_);
  if (exclusive_) {
    exclusive_->done.set_exception(std::make_exception_ptr(Error(message)));
    exclusive_ = nullptr;
  }
  wake_.notify_all();
}

}  // namespace baton::serving
