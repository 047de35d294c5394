// DynamicCluster's re-plan policy: when the membership asks for a new plan, which plan, and
// recovery after a failed pass (see dynamic_cluster.h).
#include "engine/registry/dynamic_cluster.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include <fmt/ranges.h>

#include "engine/base/error.h"
#include "engine/registry/pass_speed.h"
#include "engine/registry/planned_node_state.h"

namespace baton::registry {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

bool DynamicCluster::untracked(const std::string& node_id) const {
  return std::any_of(pinned_.begin(), pinned_.end(),
                     [&](const PlannedStage& p) { return p.record.node_id == node_id; }) &&
         !registry_->find(node_id);
}

std::vector<PlannedStage> DynamicCluster::pinned_with(const std::vector<NodeRecord>& records) const {
  std::vector<PlannedStage> pins = pinned_;
  for (auto& p : pins)
    for (const auto& r : records)
      if (r.node_id == p.record.node_id) p = planned_stage(r, p.stage.layers, p.bytes_needed);
  return pins;
}

std::vector<PlannedStage> DynamicCluster::plan_over(const std::vector<NodeRecord>& records) const {
  return plan_around(pinned_with(records), records, footprint_, options_.planner);
}

std::vector<NodeRecord> DynamicCluster::usable_records() const {
  std::map<std::string, double> measured;
  {
    std::lock_guard lock(plan_mutex_);
    measured = measured_speed_;
  }
  std::vector<NodeRecord> records;
  for (const auto& e : registry_->entries())
    if (usable_for_plan(e, footprint_.model_identity)) {
      records.push_back(e.record);
      if (auto it = measured.find(e.record.node_id); it != measured.end())
        records.back().speed = static_cast<float>(it->second);
    }
  return records;
}

void DynamicCluster::remember_pass_speeds(const std::vector<PlannedStage>& current) {
  const auto m = metrics();
  if (!m || m->tokens == 0) return;
  std::vector<StageWork> work;
  for (const auto& stage : m->stages) {
    auto it = std::find_if(current.begin(), current.end(),
                           [&](const PlannedStage& p) { return p.record.node_id == stage.node_id; });
    if (it == current.end()) continue;
    double flops = 0;
    for (int64_t l = it->stage.layers.begin; l < it->stage.layers.end; ++l)
      if (static_cast<size_t>(l) < footprint_.layer_flops.size())
        flops += footprint_.layer_flops[static_cast<size_t>(l)];
    work.push_back({stage.node_id, flops, stage.compute_ms, static_cast<double>(m->tokens), it->record.speed});
  }
  const auto speeds = speeds_from_passes(work);
  if (speeds.empty()) return;
  std::string listed;
  for (const auto& [id, gflops] : speeds) listed += fmt::format("{}{}={:.2f}", listed.empty() ? "" : " ", id, gflops);
  spdlog::info("registry event=speeds-measured tokens={} reason=\"from the stages' compute times: {}\"", m->tokens,
               listed);
  std::lock_guard lock(plan_mutex_);
  for (const auto& [id, gflops] : speeds) measured_speed_[id] = gflops;
}

void DynamicCluster::set_replan_error(const std::string& error) {
  std::lock_guard lock(plan_mutex_);
  replan_error_ = error;
}

bool DynamicCluster::lost_planned_node() const {
  if (!loaded_) return true;
  {
    std::lock_guard lock(plan_mutex_);
    if (!broken_.empty()) return true;
  }
  for (const auto& p : plan()) {
    auto e = registry_->find(p.record.node_id);
    if (!e && untracked(p.record.node_id)) continue;
    if (!e || e->state == NodeState::kOffline || !moved_since_planned(p, *e).empty()) return true;
  }
  return false;
}

bool DynamicCluster::replan_wanted() const {
  if (lost_planned_node()) return true;
  return !newcomers(usable_records()).empty();
}

std::vector<std::string> DynamicCluster::newcomers(const std::vector<NodeRecord>& records) const {
  std::lock_guard lock(plan_mutex_);
  std::vector<std::string> out;
  for (const auto& r : records)
    if (!considered_.count(r.node_id) &&
        std::none_of(plan_.begin(), plan_.end(), [&](const PlannedStage& p) { return p.record.node_id == r.node_id; }))
      out.push_back(r.node_id);
  return out;
}

bool DynamicCluster::replan() {
  const auto current = plan();
  const bool lost = lost_planned_node();
  // What went wrong with the current pipeline, naming the nodes (for the error and the log).
  std::vector<std::string> gone;
  for (const auto& p : current) {
    auto e = registry_->find(p.record.node_id);
    if (!e && untracked(p.record.node_id)) continue;
    if (!e || e->state == NodeState::kOffline)
      gone.push_back(fmt::format("node {} (layers {}) is offline{}", p.record.node_id, to_string(p.stage.layers),
                                 e && !e->reason.empty() ? " (" + e->reason + ")" : ""));
    else if (const std::string moved = moved_since_planned(p, *e); !moved.empty())
      gone.push_back(fmt::format("node {} (layers {}) {}", p.record.node_id, to_string(p.stage.layers), moved));
  }
  remember_pass_speeds(current);
  const auto records = usable_records();
  const auto joined = newcomers(records);
  if (!lost && joined.empty()) {  // nothing new: keep the plan (a spare a minimal re-plan left out stays out)
    tell_servable("");
    set_replan_error("");
    return false;
  }
  std::vector<PlannedStage> next;
  try {
    // A loss moves as few layers as possible; a join (with nothing lost) re-balances.
    next = lost && !current.empty() ? plan_keeping(current, pinned_with(records), records, footprint_, options_.planner)
                                    : plan_over(records);
    std::lock_guard lock(plan_mutex_);
    considered_.clear();
    for (const auto& r : records) considered_.insert(r.node_id);
  } catch (const std::exception& e) {
    const std::string why =
        fmt::format("re-planning over the {} usable online node(s) failed: {}", records.size(), e.what());
    const std::string refusal = gone.empty() ? why : fmt::format("{}; {}", fmt::join(gone, "; "), why);
    if (lost) tell_servable(refusal);  // before snapshot() shows replan_error_
    std::string previous;
    {
      std::lock_guard lock(plan_mutex_);
      previous = std::exchange(replan_error_, why);
    }
    if (previous != why) spdlog::error("registry event=re-plan-failed reason=\"{}\"", why);
    fail("{}", refusal);
  }
  auto same = [&] {
    if (next.size() != current.size()) return false;
    for (size_t i = 0; i < next.size(); ++i)
      if (next[i].record.node_id != current[i].record.node_id || next[i].stage.layers != current[i].stage.layers)
        return false;
    return true;
  };
  if (same() && !lost) {
    tell_servable("");
    set_replan_error("");
    return false;
  }
  std::vector<std::string> kept, loading;  // loading: "node layers" of each range that loads
  for (const auto& n : next) {
    const bool same_range = std::any_of(current.begin(), current.end(), [&](const PlannedStage& c) {
      return n.record.node_id == c.record.node_id && n.stage.layers == c.stage.layers;
    });
    if (same_range) kept.push_back(n.record.node_id);
    else loading.push_back(fmt::format("{} {}", n.record.node_id, to_string(n.stage.layers)));
  }
  // One line says the whole re-plan (the nodes' own loading/online transitions are debug lines).
  spdlog::info(
      "registry event=re-plan nodes={} kept={} reloaded={} reason=\"{}{} -> {} node(s){}; loading: {}; unchanged "
      "ranges (re-adopted, no reload): {}\"",
      next.size(), kept.size(), count_reloaded(current, next),
      gone.empty() ? std::string() : fmt::format("{}; ", fmt::join(gone, "; ")), current.size(), next.size(),
      joined.empty() ? std::string() : fmt::format(", joined: {}", fmt::join(joined, ", ")),
      loading.empty() ? std::string("none") : fmt::format("{}", fmt::join(loading, ", ")),
      kept.empty() ? std::string("none") : fmt::format("{}", fmt::join(kept, ", ")));
  loaded_ = false;
  std::unique_ptr<pipeline::Chain> old;
  {
    std::lock_guard lock(cluster_mutex_);
    old = std::move(cluster_);
  }
  tell_layers();  // no pipeline until load() below: nobody may use the old one
  old.reset();    // Goodbye on the old data connections; joined workers keep their layers
  {
    std::lock_guard lock(plan_mutex_);
    plan_ = next;
    broken_.clear();
  }
  load(next);
  set_replan_error("");
  return true;
}

bool DynamicCluster::recover(const std::string& error) {
  // The registry usually knows at once (a killed worker's control connection drops with its
  // data connection); a silent node takes the heartbeat timeout.
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(config_.heartbeat_timeout_s * 1000)) + 1s;
  uint64_t seen = registry_->version();
  while (!lost_planned_node()) {
    if (Clock::now() >= deadline) return false;
    seen = registry_->wait_for_change(seen, 100ms);
  }
  spdlog::warn("registry event=re-plan reason=\"a forward pass failed ({}); re-planning over the nodes that remain\"",
               error);
  replan();
  return true;
}

}  // namespace baton::registry
