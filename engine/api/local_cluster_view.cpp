#include "engine/api/local_cluster_view.h"

#include <fstream>
#include <sstream>

namespace baton::api {

uint64_t machine_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemTotal:") return kb * 1024;
  return 0;
}

LocalClusterView::LocalClusterView(NodeView node, int64_t n_layer, std::function<serving::SchedulerStats()> stats)
    : node_(std::move(node)), n_layer_(n_layer), stats_(std::move(stats)) {}

void LocalClusterView::set_address(const std::string& address) {
  std::lock_guard lock(mutex_);
  node_.address = address;
}

ClusterViewSnapshot LocalClusterView::snapshot() const {
  serving::SchedulerStats s = stats_();
  std::lock_guard lock(mutex_);
  ClusterViewSnapshot snap;
  snap.ready = true;
  snap.layers_covered = true;
  snap.n_layer = n_layer_;
  NodeView n = node_;
  n.status = "online";
  n.last_heartbeat_seconds = 0;  // this process
  n.load = load_.update(s.forward_seconds);
  uint64_t tokens = s.prompt_tokens + s.generated_tokens;
  n.compute_ms_per_token = tokens ? s.forward_seconds * 1000.0 / static_cast<double>(tokens) : 0;
  snap.nodes.push_back(std::move(n));
  return snap;
}

}  // namespace baton::api
