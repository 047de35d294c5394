// A thread-safe queue of received messages: the usual MessageHandler hands each message to
// an Inbox on the I/O thread, and compute threads pop them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

#include "net/node.h"

namespace baton::net {

class Inbox {
 public:
  void push(Incoming&& incoming) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(incoming));
    }
    ready_.notify_one();
  }

  // Waits up to `timeout` for a message; nullopt if none came.
  std::optional<Incoming> pop(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [&] { return !queue_.empty(); })) return std::nullopt;
    Incoming out = std::move(queue_.front());
    queue_.pop_front();
    return out;
  }

  size_t size() const {
    std::lock_guard lock(mutex_);
    return queue_.size();
  }

  // A MessageHandler that pushes here; the Inbox must outlive the Node using it.
  MessageHandler handler() {
    return [this](Incoming&& incoming) { push(std::move(incoming)); };
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Incoming> queue_;
};

}  // namespace baton::net
