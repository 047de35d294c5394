// Progress of copying weights out of the mapped file (the slow part of a large load: the bytes
// come from disk). Process-wide like the logger, so the layers that load weights (a worker's
// stage, LocalModel, the head) need no extra argument: engine-run installs a terminal bar, and
// without a listener a load that lasts longer than a couple of seconds logs a line every few
// seconds ("placing weights: 1.2 GiB / 3.4 GiB (35 %)"), which is what a worker's log shows.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>

namespace baton {

// done <= total bytes; called from one thread at a time, at most every ~100 ms and once with
// done == total at the end.
using WeightProgressListener = std::function<void(uint64_t done, uint64_t total)>;

// Replaces the process's listener (an empty function: back to the log lines).
void set_weight_progress_listener(WeightProgressListener listener);

// Decides when a running copy of `total` bytes reports: every `every` once `first_after` has
// passed (the log), or every 100 ms from the start when a listener is installed (the bar).
// Thread-safe: any copying thread may call add(); reports are serialised.
class WeightProgressReporter {
 public:
  explicit WeightProgressReporter(uint64_t total,
                                  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now());
  void add(uint64_t bytes, std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());
  void finish(std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());
  int reports() const { return reports_; }  // lines logged or listener calls so far

 private:
  void report(uint64_t done, std::chrono::steady_clock::time_point now);

  const uint64_t total_;
  const std::chrono::steady_clock::time_point start_;
  const WeightProgressListener listener_;  // copied at construction
  std::mutex mutex_;
  uint64_t done_ = 0;
  std::chrono::steady_clock::time_point next_;
  int reports_ = 0;
};

}  // namespace baton
