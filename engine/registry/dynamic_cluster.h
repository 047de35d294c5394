// The coordinator's side of `nodes: auto`: runs the registry (embedded control port, or an etcd
// watch when cluster.registry is etcd://...), waits for workers to register, plans their layer
// ranges (planner.h), and loads them through the pipeline's two-phase load (pipeline::Cluster
// over an explicit ClusterConfig built from the plan). It is also the api::ClusterView of such a
// cluster: every registered node with its status, and `ready` only while every planned node is
// online.
//
// Restart recovery: the registry file holds the last plan; when every node of that plan comes
// back with the same model identity, the same plan is loaded again, and workers that kept the
// layers (engine-worker --join keeps them when the coordinator goes away) answer Prepare at
// once, so the cluster serves again without reloading (serve_again_ms() measures it).
//
// Change while idle: replan_wanted() says when a usable node is not in the plan or a planned
// node went offline; replan() then loads the new plan through the same two-phase load, where
// workers whose range (and model, n_ctx, slots) did not change re-adopt it without reloading,
// so only the changed ranges load. The caller must be idle: cluster() is replaced.
// Not done: resuming in-flight requests on a new plan; fixed + dynamic nodes mixed.
// Thread-safety: snapshot() from any thread; the rest from the owning thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/api/cluster_view.h"
#include "engine/cluster/cluster_config.h"
#include "engine/pipeline/cluster.h"
#include "engine/registry/control_listener.h"
#include "engine/registry/node_registry.h"
#include "engine/registry/planner.h"

namespace baton::registry {

struct DynamicClusterOptions {
  pipeline::ClusterOptions cluster;  // threads, n_ctx, slots (max_sequences) ...
  PlannerOptions planner;
  // After min_nodes registered, wait until no new node joined for this long before planning.
  std::chrono::milliseconds settle{300};
};

class DynamicCluster : public api::ClusterView {
 public:
  // Opens the registry (file, control port or etcd); does not wait or load yet. Throws
  // baton::Error for a bad registry file, a busy control port or an unreachable etcd.
  DynamicCluster(const ClusterConfig& config, DynamicClusterOptions options = {});
  ~DynamicCluster() override;

  // Waits for registrations (cluster.min_nodes within cluster.join_timeout, or every node of
  // the saved plan), plans and loads. Throws baton::Error naming what is missing: too few
  // nodes (which registered), not enough memory (how much), a failed load (which node, why).
  void start();

  pipeline::Cluster& cluster();  // after start() (replaced by replan())

  // True when a usable online node is not in the plan, or a planned node went offline.
  bool replan_wanted() const;
  // Idle only. Plans over the usable online nodes; when that differs from the current plan,
  // drops the current pipeline and loads the new plan (unchanged ranges are re-adopted by their
  // workers). Returns whether the plan changed. Throws like start() when no plan fits (the
  // cluster then stays not ready; call again after more nodes joined).
  bool replan();
  NodeRegistry& registry() { return *registry_; }
  uint16_t control_port() const;  // 0 with an etcd registry
  std::vector<PlannedNode> plan() const;
  std::string plan_table() const;
  bool readopted() const { return readopted_; }  // start() reused the saved plan
  double serve_again_ms() const { return serve_ms_; }  // construction -> loaded

  api::ClusterViewSnapshot snapshot() const override;

 private:
  std::vector<NodeEntry> wait_for_nodes();
  std::vector<PlannedNode> saved_plan_if_complete(const std::vector<NodeEntry>& online) const;
  void load(const std::vector<PlannedNode>& plan);
  void watch_backend();
  void monitor();
  std::thread monitor_;

  ClusterConfig config_;
  DynamicClusterOptions options_;
  std::chrono::steady_clock::time_point created_;
  std::unique_ptr<NodeRegistry> registry_;
  std::unique_ptr<ControlListener> control_;
  std::unique_ptr<RegistryBackend> backend_;
  std::atomic<bool> stopping_{false};
  std::thread watcher_;
  ModelFootprint footprint_;
  mutable std::mutex plan_mutex_;
  std::vector<PlannedNode> plan_;  // guarded by plan_mutex_
  std::string broken_;             // guarded by plan_mutex_: why the loaded pipeline cannot serve
  std::unique_ptr<pipeline::Cluster> cluster_;
  std::atomic<bool> loaded_{false};
  bool readopted_ = false;
  double serve_ms_ = 0;
};

}  // namespace baton::registry
