// DynamicCluster as the api::ClusterView of a `nodes: auto` cluster (see dynamic_cluster.h).
#include "engine/registry/dynamic_cluster.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "engine/registry/planned_node_state.h"

namespace baton::registry {

using Clock = std::chrono::steady_clock;

api::ClusterViewSnapshot DynamicCluster::snapshot() const {
  api::ClusterViewSnapshot s;
  s.n_layer = footprint_.n_layer;
  const auto plan = this->plan();
  const auto entries = registry_->entries();
  const auto now = Clock::now();
  api::NodeView coord;
  coord.id = "coordinator";
  coord.address = fmt::format("{}:{}", config_.master_host, config_.master_port);
  coord.status = "online";
  coord.role = "coordinator";
  s.nodes.push_back(coord);
  auto view_of = [&](const NodeEntry& e) {
    api::NodeView v;
    v.id = e.record.node_id;
    v.address = fmt::format("{}:{}", e.record.host, e.record.port);
    v.status = std::string(to_string(e.state));
    v.reason = e.reason;
    v.role = "worker";
    v.load = e.record.load;
    v.last_heartbeat_seconds = e.heard ? std::chrono::duration<double>(now - e.last_seen).count() : -1;
    v.memory_total_bytes = e.record.memory_total;
    for (const auto& r : e.record.readings) v.readings[r.name] = r.value;
    return v;
  };
  std::vector<std::string> problems;
  for (const auto& p : plan) {
    auto it = std::find_if(entries.begin(), entries.end(),
                           [&](const NodeEntry& e) { return e.record.node_id == p.record.node_id; });
    NodeEntry missing;
    missing.record = p.record;
    if (untracked(p.record.node_id)) {  // pinned, never registered: as good as its pipeline
      missing.state = loaded_ ? NodeState::kOnline : NodeState::kLoading;
      missing.reason = "listed with fixed layers (not registered)";
    }
    api::NodeView v = view_of(it != entries.end() ? *it : missing);
    v.first_layer = p.stage.layers.begin;
    v.last_layer = p.stage.layers.last();
    v.memory_used_bytes = p.bytes_needed;
    if (const std::string moved = it != entries.end() ? moved_since_planned(p, *it) : std::string(); !moved.empty())
      problems.push_back(fmt::format("node {} (layers {}) {}", v.id, to_string(p.stage.layers), moved));
    else if (v.status != "online")
      problems.push_back(fmt::format("node {} (layers {}) is {}{}", v.id, to_string(p.stage.layers), v.status,
                                     it != entries.end() && !it->reason.empty() ? ": " + it->reason : ""));
    s.nodes.push_back(v);
  }
  for (const auto& e : entries)
    if (std::none_of(plan.begin(), plan.end(),
                     [&](const PlannedStage& p) { return p.record.node_id == e.record.node_id; }))
      s.nodes.push_back(view_of(e));
  s.layers_covered = !plan.empty() && problems.empty();
  std::string broken, replan_error;
  {
    std::lock_guard lock(plan_mutex_);
    broken = broken_;
    replan_error = replan_error_;
  }
  s.ready = loaded_ && s.layers_covered && broken.empty();
  if (!loaded_)
    s.detail = plan.empty()           ? fmt::format("waiting for workers to register ({} known)", entries.size())
               : replan_error.empty() ? "loading the planned layers"
                                      : replan_error;
  else if (!problems.empty()) s.detail = fmt::format("{}", fmt::join(problems, "; "));
  else if (!broken.empty()) s.detail = broken;
  if (!s.ready && loaded_ && !replan_error.empty()) s.detail += "; " + replan_error;
  return s;
}

}  // namespace baton::registry
