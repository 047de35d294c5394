// RequestHandle: the consumer's side of one request (see scheduler.h).
#include "engine/serving/scheduler.h"

namespace baton::serving {

RequestHandle::Poll RequestHandle::next(TokenEvent& event, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty() || done_; })) return Poll::kTimeout;
  if (events_.empty()) return Poll::kDone;
  event = std::move(events_.front());
  events_.pop_front();
  return Poll::kToken;
}

void RequestHandle::cancel() {
  std::lock_guard lock(mutex_);
  cancelled_ = true;
}

bool RequestHandle::cancelled() const {
  std::lock_guard lock(mutex_);
  return cancelled_;
}

CompletionSummary RequestHandle::summary() const {
  std::lock_guard lock(mutex_);
  return summary_;
}

void RequestHandle::publish(TokenEvent event) {
  {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(event));
  }
  ready_.notify_all();
}

void RequestHandle::complete(CompletionSummary summary) {
  {
    std::lock_guard lock(mutex_);
    if (done_) return;
    summary_ = std::move(summary);
    done_ = true;
  }
  ready_.notify_all();
}

}  // namespace baton::serving
