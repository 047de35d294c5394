#include "engine/model/load_progress_listener.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace baton {
namespace {

std::mutex g_listener_mutex;
WeightProgressListener g_listener;

constexpr auto kBarEvery = std::chrono::milliseconds(100);
constexpr auto kLogFirstAfter = std::chrono::seconds(2);  // small loads stay quiet
constexpr auto kLogEvery = std::chrono::seconds(5);

WeightProgressListener current_listener() {
  std::lock_guard lock(g_listener_mutex);
  return g_listener;
}

double gib(uint64_t bytes) { return static_cast<double>(bytes) / double(1ull << 30); }

}  // namespace

void set_weight_progress_listener(WeightProgressListener listener) {
  std::lock_guard lock(g_listener_mutex);
  g_listener = std::move(listener);
}

WeightProgressReporter::WeightProgressReporter(uint64_t total, std::chrono::steady_clock::time_point start)
    : total_(total),
      start_(start),
      listener_(current_listener()),
      next_(start + (listener_ ? std::chrono::steady_clock::duration(kBarEvery)
                               : std::chrono::steady_clock::duration(kLogFirstAfter))) {}

void WeightProgressReporter::add(uint64_t bytes, std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(mutex_);  // once per slice of 256 rows: no contention worth avoiding
  done_ += bytes;
  if (now < next_) return;
  next_ = now +
          (listener_ ? std::chrono::steady_clock::duration(kBarEvery) : std::chrono::steady_clock::duration(kLogEvery));
  report(done_, now);
}

void WeightProgressReporter::finish(std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(mutex_);
  done_ = total_;
  // The bar always closes at 100 %; the log says the total only for a load it reported on.
  if (listener_ || reports_ > 0) report(done_, now);
}

void WeightProgressReporter::report(uint64_t done, std::chrono::steady_clock::time_point now) {
  ++reports_;
  if (listener_) {
    listener_(done, total_);
    return;
  }
  const double seconds = std::chrono::duration<double>(now - start_).count();
  spdlog::info("placing weights: {:.2f} GiB / {:.2f} GiB ({:.0f} %), {:.1f} s, {:.2f} GiB/s", gib(done), gib(total_),
               total_ ? 100.0 * static_cast<double>(done) / static_cast<double>(total_) : 100.0, seconds,
               seconds > 0 ? gib(done) / seconds : 0.0);
}

}  // namespace baton
