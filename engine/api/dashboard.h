// The data behind the web UI's dashboard (GET /v1/dashboard, docs/API.md): one JSON document
// built from what /v1/cluster and /metrics already know — the cluster view in pipeline order,
// the coordinator's per-stage and per-hop measurements, the scheduler's queue — plus a short
// history of tokens/s and per-stage compute time for the dashboard's plot.
// Thread-safety: DashboardHistory synchronises; dashboard_json() is a pure function.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/cluster/cluster_view.h"
#include "engine/pipeline/cluster.h"
#include "engine/serving/scheduler.h"

namespace baton::api {

// Rates between successive samples of the cumulative counters, kept for `window_seconds`.
// Sampled when the dashboard is read (at most once per `interval_seconds`), so nothing runs
// while nobody looks; the plot shows the gap.
class DashboardHistory {
 public:
  struct Point {
    double t = 0;                  // seconds since the server started
    double tokens_per_second = 0;  // generated tokens over the interval before t
    // Per stage (plan order): compute ms per pipeline token over the interval; absent when the
    // pipeline ran no token then or was re-planned (its counters restarted).
    std::vector<std::pair<std::string, double>> stage_ms_per_token;
  };

  explicit DashboardHistory(double interval_seconds = 1.0, double window_seconds = 300.0)
      : interval_(interval_seconds), window_(window_seconds) {}
  // Adds a point when `interval` has passed since the last sample.
  void sample(double now, uint64_t generated_tokens, const std::optional<pipeline::ClusterMetrics>& metrics);
  std::vector<Point> points() const;

 private:
  struct Counters {
    double t = -1;
    uint64_t generated = 0;
    uint64_t pipeline_tokens = 0;
    std::vector<std::pair<std::string, double>> stage_compute_ms;
  };
  mutable std::mutex mutex_;
  double interval_, window_;
  Counters last_;
  std::deque<Point> points_;
};

struct DashboardInputs {
  std::string model_id;
  double now = 0;  // seconds since the server started
  ClusterViewSnapshot cluster;
  std::optional<pipeline::ClusterMetrics> metrics;  // nullopt in local mode
  serving::SchedulerStats scheduler;
  int slots = 0;
  std::vector<double> recent_ttft_seconds;
  std::vector<DashboardHistory::Point> history;
};

// {"model", "time", "ready", "detail", "n_layer", "layers_covered", "nodes": [...],
//  "stages": [...], "hops": [...], "totals": {...}, "history": [...]} — see docs/API.md.
nlohmann::json dashboard_json(const DashboardInputs& in);

// The q-quantile (0..1) of `values` by the nearest-rank method; nullopt when empty.
std::optional<double> quantile(std::vector<double> values, double q);

}  // namespace baton::api
