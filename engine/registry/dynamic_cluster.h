// The coordinator's side of `nodes: auto`: runs the registry (embedded control port, or an etcd
// watch when cluster.registry is etcd://...), waits for workers to register, plans their layer
// ranges (planner.h), and loads them through the pipeline's two-phase load (a pipeline::Chain
// built from the plan's stage assignments, on the one model front this object opened). It is
// also the api::ClusterView of such a
// cluster: every registered node with its status, and `ready` only while every planned node is
// online.
//
// Restart recovery: the registry file holds the last plan; when every node of that plan comes
// back with the same model identity, the same plan is loaded again, and workers that kept the
// layers (engine-worker --join keeps them when the coordinator goes away) answer Prepare at
// once, so the cluster serves again without reloading (serve_again_ms() measures it).
//
// Change and failure: replan() loads a new plan over the usable online nodes through the same
// two-phase load, where workers whose range (and model, n_ctx, slots) did not change re-adopt
// it without reloading, so only the changed ranges load. recover() is the same after a failed
// forward pass whose cause is a planned node going offline. The model front (front(): file,
// embeddings, output head, tokenizer) and the runner (layers()) stay valid across re-plans, so a
// serving scheduler keeps them and only rebuilds its sequences' caches (engine/api/served_model).
// Mixed topology (a node list with an `auto` entry): listed nodes with layers are pinned to them
// (planned around, see plan_around; they need not join), listed nodes without layers are
// required before the first plan, and every other worker that joins is planned too.
// Thread-safety: snapshot(), metrics(), node_plan(), replan_wanted(), lost_planned_node() from
// any thread; start(), replan(), recover() and layers() from one thread at a time, with no
// forward pass in flight for replan()/recover() (cluster() is replaced).
// Files: dynamic_cluster.cpp (membership, waiting, loading), dynamic_replan.cpp (re-plan policy,
// recovery), dynamic_cluster_view.cpp (snapshot()).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <set>
#include <thread>
#include <vector>

#include "engine/cluster/cluster_config.h"
#include "engine/cluster/planner.h"
#include "engine/cluster/cluster_view.h"
#include "engine/model/model_head.h"
#include "engine/pipeline/chain.h"
#include "engine/pipeline/cluster.h"
#include "engine/registry/control_listener.h"
#include "engine/registry/node_registry.h"
#include "engine/runtime/layer_runner.h"
#include "engine/runtime/unavailable_layers.h"
#include "engine/runtime/model_front.h"
#include "engine/tokenizer/tokenizer.h"
#include "kernels/core/thread_pool.h"

namespace baton::registry {

struct DynamicClusterOptions {
  pipeline::ClusterOptions cluster;  // threads (for the front), n_ctx, slots (max_sequences) ...
  PlannerOptions planner;
  // After min_nodes registered, wait until no new node joined for this long before planning.
  std::chrono::milliseconds settle{300};
};

class DynamicCluster : public api::ClusterView {
 public:
  // Opens the registry (file, control port or etcd); does not wait or load yet. Throws
  // baton::Error for a bad registry file, a busy control port or an unreachable etcd. `front`:
  // config.model's front already open (its threads and n_ctx are used); nullptr: opens it.
  DynamicCluster(const ClusterConfig& config, DynamicClusterOptions options = {},
                 std::shared_ptr<ModelFront> front = nullptr);
  ~DynamicCluster() override;

  // Waits for registrations (cluster.min_nodes within cluster.join_timeout, or every node of
  // the saved plan), plans and loads. Throws baton::Error naming what is missing: too few
  // nodes (which registered), not enough memory (how much), a failed load (which node, why).
  void start();

  pipeline::Chain& cluster();  // after start() (replaced by replan(); throws when not loaded)

  // The coordinator's part of the model, valid for the object's lifetime (not per pipeline).
  const std::shared_ptr<ModelFront>& front() const { return front_; }
  ModelHead& head() { return front_->head(); }
  const tokenizer::Tokenizer& tokenizer() const { return front_->tokenizer(); }
  const std::shared_ptr<const gguf::GgufFile>& file() const { return front_->file(); }
  const ModelConfig& model_config() const { return front_->config(); }
  int64_t n_ctx() const { return front_->n_ctx(); }
  // The layers of the pipeline loaded now (cluster().layers()); with none loaded, a runner whose
  // every pass fails saying why. A re-plan replaces it: see set_layers_listener().
  LayerRunner& layers();

  // True when a usable online node that was not usable at the last plan is not in it (a join), a
  // planned node went offline, or no pipeline is loaded.
  bool replan_wanted() const;
  // True when a planned node is offline (or no pipeline is loaded): the pipeline cannot serve.
  bool lost_planned_node() const;
  // No forward pass in flight. After a loss, keeps every range whose node remains and places only
  // the lost layers (planner.h plan_keeping: spares first, else a neighbour grows); after a join, plans
  // afresh over the usable online nodes. When that differs from the current plan (or the pipeline
  // is broken), drops the current pipeline and loads the new plan
  // (unchanged ranges are re-adopted by their workers: their KV caches are cleared). Returns
  // whether a pipeline was (re)loaded. Throws like start() when no plan fits, naming the lost
  // node and how much memory is missing (the cluster then stays not ready, snapshot().detail
  // says why; call again after more nodes joined).
  bool replan();
  // After a forward pass failed with `error`: waits up to the heartbeat timeout + 1 s for the
  // registry to show a planned node offline, then replan()s. Returns true when a new pipeline
  // is loaded (every KV cache is lost: rebuild the sequences), false when no planned node went
  // offline (the failure was something else). Throws like replan().
  bool recover(const std::string& error);

  NodeRegistry& registry() { return *registry_; }
  uint16_t control_port() const;  // 0 with an etcd registry
  std::vector<PlannedStage> plan() const;
  std::string plan_table() const;
  // The loaded pipeline's plan and measurements (empty / nullopt when none is loaded).
  std::vector<StageAssignment> node_plan() const;
  std::optional<pipeline::ClusterMetrics> metrics() const;
  bool readopted() const { return readopted_; }        // start() reused the saved plan
  double serve_again_ms() const { return serve_ms_; }  // construction -> loaded

  api::ClusterViewSnapshot snapshot() const override;

  // Told why requests must be refused now (empty: they may be served again), always before
  // snapshot() shows the change, so a client that saw /health never gets a different answer
  // from its next request. Set once, before the first replan()/recover().
  using ServableListener = std::function<void(const std::string& refusal)>;
  void set_servable_listener(ServableListener listener) { servable_listener_ = std::move(listener); }
  // Told the new layers() whenever replan()/recover() replace them (on their caller's thread,
  // before the old pipeline is closed): a serving scheduler swaps its runner there
  // (Scheduler::replace_runner, inside its idle mechanism). Set once, before the first replan().
  using LayersListener = std::function<void(LayerRunner& layers)>;
  void set_layers_listener(LayersListener listener) { layers_listener_ = std::move(listener); }

 private:
  std::vector<NodeEntry> wait_for_nodes();
  // Usable nodes, each with its measured speed where one is known.
  std::vector<NodeRecord> usable_records() const;
  // Reads the loaded chain's per-stage compute times into measured_speed_ (before a re-plan).
  void remember_pass_speeds(const std::vector<PlannedStage>& current);
  // The plan over `records` around the pinned nodes (each pinned node's registered record
  // replaces its YAML one when it joined).
  std::vector<PlannedStage> plan_over(const std::vector<NodeRecord>& records) const;
  std::vector<PlannedStage> pinned_with(const std::vector<NodeRecord>& records) const;
  // Usable nodes among `records` that are neither planned nor were usable at the last plan.
  std::vector<std::string> newcomers(const std::vector<NodeRecord>& records) const;
  // A pinned node that never registered: not tracked by the registry (its loss shows as a
  // failed forward pass, like a static cluster's node).
  bool untracked(const std::string& node_id) const;
  void set_replan_error(const std::string& error);
  void tell_servable(const std::string& refusal) const;
  void tell_layers();
  std::vector<PlannedStage> saved_plan_if_complete(const std::vector<NodeEntry>& online) const;
  void load(const std::vector<PlannedStage>& plan);
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
  std::vector<PlannedStage> pinned_;             // mixed topology: listed nodes with layers
  std::vector<std::string> required_;            // mixed topology: listed nodes without layers (must join)
  std::shared_ptr<ModelFront> front_;            // opened once: every chain of every re-plan uses it
  std::unique_ptr<UnavailableLayers> unloaded_;  // layers() while no pipeline is loaded
  mutable std::mutex plan_mutex_;
  std::vector<PlannedStage> plan_;    // guarded by plan_mutex_
  std::string broken_;                // guarded by plan_mutex_: why the loaded pipeline cannot serve
  std::string replan_error_;          // guarded by plan_mutex_: why the last re-plan or load failed
  std::set<std::string> considered_;  // guarded by plan_mutex_: usable node ids at the last plan
  // guarded by plan_mutex_: planned nodes' speeds from their real pass times (pass_speed.h), which
  // replace the join-time calibration in every later plan; kept across re-plans.
  std::map<std::string, double> measured_speed_;
  mutable std::mutex cluster_mutex_;  // guards the cluster_ pointer against metrics()/node_plan()
  std::unique_ptr<pipeline::Chain> cluster_;
  std::atomic<bool> loaded_{false};
  bool readopted_ = false;
  double serve_ms_ = 0;
  ServableListener servable_listener_;
  LayersListener layers_listener_;
};

}  // namespace baton::registry
