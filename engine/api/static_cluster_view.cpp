#include "engine/api/static_cluster_view.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/cluster/node_readings.h"

namespace baton::api {

using Clock = std::chrono::steady_clock;

StaticClusterView::StaticClusterView(pipeline::Cluster& cluster, serving::Scheduler& scheduler, NodeView coordinator)
    : cluster_(cluster), scheduler_(scheduler), coordinator_(std::move(coordinator)) {
  size_t n = cluster.plan().size();
  last_seen_.assign(n, Clock::now());  // loaded just now: every worker answered
  load_.resize(n);
  load_value_.assign(n, 0.0);
}

void StaticClusterView::refresh() const {
  std::lock_guard lock(mutex_);
  // A lost link is the cluster's to repair (ServedModel's repairer); its reason names the node.
  if (auto broken = cluster_.broken()) {
    failure_ = *broken;
    return;
  }
  try {
    std::vector<pipeline::StageStats> fresh;
    if (!scheduler_.run_when_idle([&] { fresh = cluster_.stats(); }, std::chrono::milliseconds(200))) return;
    auto now = Clock::now();
    for (size_t i = 0; i < fresh.size() && i < last_seen_.size(); ++i) {
      last_seen_[i] = now;
      auto busy = fresh[i].values.find("busy_ms");
      if (busy != fresh[i].values.end()) load_value_[i] = load_[i].update(busy->second / 1000.0, now);
    }
    stats_ = std::move(fresh);
    failure_.clear();  // every node answered (again)
  } catch (const std::exception& e) {
    failure_ = e.what();
    spdlog::error("cluster event=node-lost reason=\"{}\"", failure_);
  }
}

ClusterViewSnapshot StaticClusterView::snapshot() const {
  refresh();
  std::lock_guard lock(mutex_);
  ClusterViewSnapshot snap;
  snap.n_layer = cluster_.config().n_layer;
  NodeView c = coordinator_;
  c.status = "online";
  c.last_heartbeat_seconds = 0;
  snap.nodes.push_back(c);
  bool all_online = true;
  const auto& plan = cluster_.plan();
  for (size_t i = 0; i < plan.size(); ++i) {
    const auto& p = plan[i];
    NodeView n;
    n.id = p.node_id;
    n.address = fmt::format("{}:{}", p.host, p.port);
    n.first_layer = p.layers.begin;  // the view's inclusive range (JSON)
    n.last_layer = p.layers.last();
    n.role = "worker";
    // The failure message names the node ("node node-02 (127.0.0.1:8011) ...").
    bool failed = !failure_.empty() && failure_.find(p.node_id) != std::string::npos;
    n.status = failed ? "offline" : "online";
    if (failed) n.reason = failure_;
    all_online = all_online && !failed;
    // A listed worker sends no heartbeats and reports no machine memory: unknown (null), not
    // "0.0 s ago" and 0 bytes (issue 29); memory_used_bytes below is what its stats report.
    n.last_heartbeat_seconds = -1;
    n.load = load_value_[i];
    for (const auto& s : stats_) {
      if (s.node_id != p.node_id) continue;
      auto ms = s.values.find("compute_ms");
      auto tokens = s.values.find("tokens");
      if (ms != s.values.end() && tokens != s.values.end() && tokens->second > 0)
        n.compute_ms_per_token = ms->second / tokens->second;
      auto mem = s.values.find("memory_bytes");
      if (mem != s.values.end()) n.memory_used_bytes = static_cast<uint64_t>(mem->second);
      for (const auto& [name, value] : s.values)
        if (registry::is_node_reading(name)) n.readings[name] = value;
      auto total = n.readings.find(registry::kReadingMemoryTotal);
      if (total != n.readings.end()) n.memory_total_bytes = static_cast<uint64_t>(total->second);
    }
    snap.nodes.push_back(std::move(n));
  }
  snap.ready = failure_.empty();
  snap.layers_covered = all_online && failure_.empty();
  snap.detail = failure_;
  return snap;
}

void StaticClusterView::set_coordinator_address(const std::string& address) {
  std::lock_guard lock(mutex_);
  coordinator_.address = address;
}

std::vector<pipeline::StageStats> StaticClusterView::stage_stats() const {
  refresh();
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace baton::api
