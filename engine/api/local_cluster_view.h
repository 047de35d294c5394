// ClusterView of the single-process mode: one "coordinator" node holding every layer, always
// online while the process runs. Load and compute time come from the scheduler's counters.
// Thread-safe.
#pragma once

#include <functional>
#include <mutex>

#include "engine/api/load_meter.h"
#include "engine/cluster/cluster_view.h"
#include "engine/serving/scheduler.h"

namespace baton::api {

class LocalClusterView : public ClusterView {
 public:
  // node: id, address, layers and memory of this process; stats: the scheduler's counters.
  LocalClusterView(NodeView node, int64_t n_layer, std::function<serving::SchedulerStats()> stats);
  void set_address(const std::string& address);
  ClusterViewSnapshot snapshot() const override;

 private:
  mutable std::mutex mutex_;
  NodeView node_;
  int64_t n_layer_;
  std::function<serving::SchedulerStats()> stats_;
  mutable LoadMeter load_;
};

// Total memory of this machine (/proc/meminfo MemTotal), 0 when unknown.
uint64_t machine_memory_bytes();

}  // namespace baton::api
