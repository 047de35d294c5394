// Session timers and clock probes: the watchdog (idle timeout, close linger, when to probe) and
// the ClockPing/ClockPong exchange that estimates the peer's clock (Connection::clock()).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "net/detail/asio_util.h"
#include "net/detail/session.h"

namespace baton::net::detail {

asio::awaitable<void> Session::watchdog() {
  co_await asio::this_coro::throw_if_cancelled(false);
  while (!ended()) {
    auto now = Clock::now();
    auto deadline = Clock::time_point::max();
    if (config_.idle_timeout.count() > 0) {
      auto idle_deadline = last_activity_ + config_.idle_timeout;
      if (now >= idle_deadline) {
        record_close(
            {CloseKind::kTimeout, fmt::format("no frame from {} for {} ms", who(), config_.idle_timeout.count())});
        co_return;
      }
      deadline = idle_deadline;
    }
    if (close_deadline_) {
      if (now >= *close_deadline_) {
        std::lock_guard lock(mutex_);
        if (!close_info_)
          close_info_ =
              CloseInfo{CloseKind::kLocal, fmt::format("{} (closed after {} ms with {} frames still unsent to {})",
                                                       close_requested_.value_or("closed locally"),
                                                       config_.close_linger.count(), outbox_.size(), who())};
        co_return;
      }
      deadline = std::min(deadline, *close_deadline_);
    }
    if (probing_) {
      if (now >= next_probe_) {
        queue_probe(ClockPing{});
        ++probes_sent_;
        // A first few quickly, so an estimate exists before the first data frames.
        next_probe_ = now + (probes_sent_ < 4 ? std::chrono::milliseconds(10) : config_.clock_probe_interval);
      }
      deadline = std::min(deadline, next_probe_);
    }
    watchdog_timer_->expires_at(deadline);
    co_await watchdog_timer_->async_wait(kNoThrow);  // cancelled by wake() or the race
  }
}

void Session::queue_probe(Message probe) {
  {
    std::lock_guard lock(mutex_);
    if (!serving_ || close_info_ || close_requested_) return;
    OutFrame frame;
    frame.probe = std::move(probe);
    outbox_bytes_ += frame.bytes();  // the writer subtracts the same when it pops it
    outbox_.push_front(std::move(frame));
  }
  if (wake_timer_) wake_timer_->cancel();
}

bool Session::handle_probe(const Message& m, Clock::time_point received) {
  if (const auto* ping = std::get_if<ClockPing>(&m)) {
    queue_probe(ClockPong{ping->sent_ns, steady_ns(received), 0});
    if (!probing_ && config_.clock_probe_interval.count() > 0) {  // the peer probes: so do we
      probing_ = true;
      next_probe_ = Clock::now();
      if (watchdog_timer_) watchdog_timer_->cancel();
    }
    return true;
  }
  if (const auto* pong = std::get_if<ClockPong>(&m)) {
    // Only an answer to a ping of ours counts (a pong made up by the peer could skew the clock).
    auto out = std::find(pings_out_.begin(), pings_out_.end(), pong->ping_sent_ns);
    if (pong->ping_sent_ns == 0 || out == pings_out_.end()) return true;
    *out = 0;
    std::lock_guard lock(mutex_);
    if (!clock_.add(pong->ping_sent_ns, pong->ping_received_ns, pong->sent_ns, steady_ns(received)))
      spdlog::debug("net: dropped an inconsistent clock probe from {}", who());
    return true;
  }
  return false;
}

std::optional<ClockEstimate> Session::clock() const {
  std::lock_guard lock(mutex_);
  return clock_.estimate(steady_ns(Clock::now()));
}

}  // namespace baton::net::detail
