#include <algorithm>

#include "engine/runtime/draft_model.h"
#include "engine/serving/scheduler_pass.h"
#include "engine/serving/sequence.h"

namespace baton::serving {

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
    summary.queue_seconds = scheduler_seconds_since(q.submitted);
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
        layers_->reset_sequence(evicted);
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
      layers_->reset_sequence(id);
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

}  // namespace baton::serving
