#include "engine/pipeline/load_progress.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

namespace baton::pipeline {

using Clock = std::chrono::steady_clock;

namespace {
std::mutex installed_mutex;
std::shared_ptr<LoadProgress> installed_progress;
}  // namespace

void LoadProgress::install(std::shared_ptr<LoadProgress> progress) {
  std::lock_guard lock(installed_mutex);
  installed_progress = std::move(progress);
}

std::shared_ptr<LoadProgress> LoadProgress::current() {
  std::lock_guard lock(installed_mutex);
  return installed_progress;
}

LoadProgress::~LoadProgress() { stop_reporting(); }

void LoadProgress::begin(const std::string& phase, size_t total, std::chrono::milliseconds limit) {
  std::lock_guard lock(mutex_);
  phase_ = phase;
  total_ = total;
  connected_ = ready_ = 0;
  bytes_ = 0;
  waiting_for_.clear();
  pending_.clear();
  phase_start_ = Clock::now();
  limit_ = limit;
}

void LoadProgress::registered(size_t count, size_t wanted) {
  std::lock_guard lock(mutex_);
  registered_ = count;
  wanted_ = wanted;
}

void LoadProgress::waiting_for(const std::string& node_id) {
  std::lock_guard lock(mutex_);
  waiting_for_ = node_id;
}

void LoadProgress::connected(size_t count) {
  std::lock_guard lock(mutex_);
  connected_ = count;
  if (count == total_) waiting_for_.clear();
}

void LoadProgress::ready(size_t count, uint64_t bytes) {
  std::lock_guard lock(mutex_);
  ready_ = count;
  bytes_ = bytes;
}

void LoadProgress::pending(std::vector<std::string> node_ids) {
  std::lock_guard lock(mutex_);
  pending_ = std::move(node_ids);
}

void LoadProgress::done() {
  {
    std::lock_guard lock(mutex_);
    phase_ = "serving";
  }
  stop_reporting();
}

nlohmann::json LoadProgress::to_json() const {
  std::lock_guard lock(mutex_);
  nlohmann::json j = {{"phase", phase_},
                      {"nodes_total", total_},
                      {"nodes_connected", connected_},
                      {"nodes_ready", ready_},
                      {"bytes_loaded", bytes_},
                      {"elapsed_seconds", std::chrono::duration<double>(Clock::now() - phase_start_).count()},
                      {"limit_seconds", static_cast<double>(limit_.count()) / 1000.0}};
  if (phase_ == "joining") {
    j["nodes_registered"] = registered_;
    j["nodes_wanted"] = wanted_;
  }
  if (!waiting_for_.empty()) j["waiting_for"] = waiting_for_;
  if (!pending_.empty()) j["pending"] = pending_;
  return j;
}

std::string LoadProgress::line() const {
  std::lock_guard lock(mutex_);
  const double s = std::chrono::duration<double>(Clock::now() - phase_start_).count();
  const double limit = static_cast<double>(limit_.count()) / 1000.0;
  if (phase_ == "joining")
    return fmt::format("{}/{} nodes registered ... {:.0f} s / {:.0f} s", registered_, wanted_, s, limit);
  if (phase_ == "connecting")
    return waiting_for_.empty() ? fmt::format("{}/{} nodes connected", connected_, total_)
                                : fmt::format("waiting for {} ... {:.0f} s / {:.0f} s ({}/{} nodes connected)",
                                              waiting_for_, s, limit, connected_, total_);
  if (phase_ == "loading") {
    std::string out = fmt::format("{}/{} nodes ready, {:.1f} MiB loaded ... {:.0f} s / {:.0f} s", ready_, total_,
                                  static_cast<double>(bytes_) / 1048576.0, s, limit);
    if (!pending_.empty() && pending_.size() <= 4) out += fmt::format(" (waiting for {})", fmt::join(pending_, ", "));
    return out;
  }
  return phase_;
}

void LoadProgress::start_reporting(std::chrono::milliseconds every) {
  std::lock_guard lock(mutex_);
  if (reporter_.joinable()) return;
  stop_ = false;
  reporter_ = std::thread([this, every] {
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, every, [this] { return stop_; })) {
      if (phase_ == "starting" || phase_ == "serving") continue;
      lock.unlock();
      spdlog::info("loading: {}", line());
      lock.lock();
    }
  });
}

void LoadProgress::stop_reporting() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (reporter_.joinable() && reporter_.get_id() != std::this_thread::get_id()) reporter_.join();
}

}  // namespace baton::pipeline
