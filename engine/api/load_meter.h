// Share of the last minute a node spent busy, from a cumulative busy-time counter sampled
// whenever it is read (best effort: before a minute has passed, over the time seen so far).
// Not thread-safe; the owner locks.
#pragma once

#include <chrono>
#include <deque>
#include <utility>

namespace baton::api {

class LoadMeter {
 public:
  using Clock = std::chrono::steady_clock;
  // busy_seconds: cumulative busy time now. Returns busy share of the window, 0..1.
  double update(double busy_seconds, Clock::time_point now = Clock::now()) {
    samples_.emplace_back(now, busy_seconds);
    while (samples_.size() > 2 && now - samples_[1].first >= std::chrono::seconds(60)) samples_.pop_front();
    const auto& [t0, b0] = samples_.front();
    double wall = std::chrono::duration<double>(now - t0).count();
    if (wall <= 0) return last_;
    double share = (busy_seconds - b0) / wall;
    last_ = share < 0 ? 0 : share > 1 ? 1 : share;
    return last_;
  }

 private:
  std::deque<std::pair<Clock::time_point, double>> samples_;
  double last_ = 0;
};

}  // namespace baton::api
