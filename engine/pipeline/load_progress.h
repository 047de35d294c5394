// What a coordinator is doing before it can serve, for /health (503 {"status": "loading",
// "progress": ...}, as llama-server answers while it loads) and for the progress lines it logs
// while it waits ("waiting for node-05 ... 4 s / 30 s", "37/39 nodes ready"). Written by the
// loading code (DynamicCluster, pipeline::Cluster), read by the HTTP thread and the reporter.
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace baton::pipeline {

class LoadProgress {
 public:
  LoadProgress() = default;
  ~LoadProgress();  // stop_reporting()
  LoadProgress(const LoadProgress&) = delete;
  LoadProgress& operator=(const LoadProgress&) = delete;

  // A new phase ("joining", "connecting", "loading") over `total` nodes, waiting at most `limit`.
  void begin(const std::string& phase, size_t total, std::chrono::milliseconds limit);
  void registered(size_t count, size_t wanted);     // joining: nodes registered of those wanted
  void waiting_for(const std::string& node_id);     // connecting: the node being connected to
  void connected(size_t count);                     // connecting: nodes connected
  void ready(size_t count, uint64_t bytes);         // loading: nodes ready, bytes they reported
  void pending(std::vector<std::string> node_ids);  // loading: the nodes not ready yet
  void done();                                      // serving: no more lines

  nlohmann::json to_json() const;  // {"phase", "nodes_total", "nodes_connected", "nodes_ready", ...}
  std::string line() const;        // the progress line logged now

  // Logs line() every `every` while a phase runs (spdlog info), from a thread of its own.
  void start_reporting(std::chrono::milliseconds every = std::chrono::milliseconds(1000));
  void stop_reporting();

  // The process's load progress, told by pipeline::Cluster and registry::DynamicCluster when set
  // (engine-coordinator sets it while it loads; null otherwise, e.g. in tests and engine-run).
  // Process-wide like the logger, so the loading code needs no extra constructor argument.
  static void install(std::shared_ptr<LoadProgress> progress);
  static std::shared_ptr<LoadProgress> current();

 private:
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::string phase_ = "starting";
  size_t total_ = 0, connected_ = 0, ready_ = 0, registered_ = 0, wanted_ = 0;
  uint64_t bytes_ = 0;
  std::string waiting_for_;
  std::vector<std::string> pending_;
  std::chrono::steady_clock::time_point phase_start_ = std::chrono::steady_clock::now();
  std::chrono::milliseconds limit_{0};
  bool stop_ = false;
  std::thread reporter_;
};

}  // namespace baton::pipeline
