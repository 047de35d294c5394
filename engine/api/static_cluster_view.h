// ClusterView of a fixed cluster (engine-coordinator --config): the coordinator plus the
// workers of the plan, in pipeline order. Worker status, load and compute time come from
// Cluster::stats(), asked through the scheduler's Scheduler::run_when_idle() so the round trip
// never interleaves with forward passes; when the pipeline stays busy the last answer is reused.
// A lost link (Cluster::broken(): a worker died or was taken over by another coordinator) or a
// failed Stats round trip marks the cluster not ready and the node it names offline, until the
// pipeline is repaired (ServedModel reconnects and reloads it) and every node answers again.
// Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/api/load_meter.h"
#include "engine/cluster/cluster_view.h"
#include "engine/pipeline/cluster.h"
#include "engine/serving/scheduler.h"

namespace baton::api {

class StaticClusterView : public ClusterView {
 public:
  // coordinator: the coordinator's own node entry (id, address, memory).
  StaticClusterView(pipeline::Cluster& cluster, serving::Scheduler& scheduler, NodeView coordinator);
  ClusterViewSnapshot snapshot() const override;
  void set_coordinator_address(const std::string& address);

  // The last per-stage counters (refreshed like snapshot()); empty before the first answer.
  std::vector<pipeline::StageStats> stage_stats() const;

 private:
  // Asks the workers for fresh stats if the pipeline is idle within a short wait.
  void refresh() const;

  pipeline::Cluster& cluster_;
  serving::Scheduler& scheduler_;  // its thread runs the pipeline: Stats go between passes
  mutable std::mutex mutex_;       // guards everything below
  NodeView coordinator_;
  mutable std::vector<pipeline::StageStats> stats_;
  mutable std::vector<std::chrono::steady_clock::time_point> last_seen_;
  mutable std::vector<LoadMeter> load_;
  mutable std::vector<double> load_value_;
  mutable std::string failure_;
};

}  // namespace baton::api
