#include "engine/serving/scheduler.h"

#include <algorithm>
#include <cstdint>

#include "engine/runtime/draft_model.h"
#include "engine/serving/scheduler_pass.h"
#include "engine/serving/sequence.h"

namespace baton::serving {

namespace {
constexpr size_t kMaxTopLogprobs = 20;
}  // namespace

Scheduler::Scheduler(ModelHead& head, LayerRunner& layers, const tokenizer::Tokenizer& tokenizer,
                     const SchedulerOptions& options)
    : head_(head), layers_(&layers), tokenizer_(tokenizer), options_(options) {
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
  if (layers_->max_in_flight() < 1)
    fail("the layer runner allows {} passes in flight; it must allow at least 1", layers_->max_in_flight());
  n_ctx_ = layers_->n_ctx();
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

void Scheduler::run() {
  for (;;) {
    bool idle_tasks_waiting = false;
    {
      std::unique_lock lock(mutex_);
      if (active_.empty() && passes_.empty())
        wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || !idle_tasks_.empty(); });
      if (stopping_) break;
      idle_tasks_waiting = !idle_tasks_.empty();
    }
    if (idle_tasks_waiting && run_idle_tasks()) continue;  // no second lock a step when none waits
    admit();
    drop_cancelled();
    submit_passes();
    if (!passes_.empty()) finish_oldest_pass();
  }
  shut_down();
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
      layers_->reset_sequence(seq.id());
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
      layers_->finish(out_rows_);
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
    summary.queue_seconds = scheduler_seconds_since(q.submitted);
    q.handle->complete(std::move(summary));
  }
  fail_idle_tasks(message);
}

}  // namespace baton::serving
