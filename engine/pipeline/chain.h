// The coordinator's link to a chain of engine-workers: given stage assignments (node id,
// address, layer span) it connects to every worker and loads them as one transaction (Prepare
// to all -> Ready from all -> Commit; any Failed, closed connection or timeout -> Rollback to
// all and a baton::Error naming the node(s) and why). Its RemoteLayers (remote_layers.h) runs
// forward passes along the chain. It holds no model: the identity, n_embd and n_ctx it sends
// come from the model front (engine/runtime/model_front.h), which outlives it.
// pipeline::Cluster (a YAML node list) and registry::DynamicCluster (a chain per plan) build it.
//
// Not thread-safe: layers() / stats() / repair() from one thread at a time; metrics(),
// broken() and abandon_node() may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/cluster/stage_assignment.h"
#include "engine/pipeline/chain_metrics.h"
#include "engine/pipeline/remote_layers.h"
#include "engine/runtime/model_front.h"
#include "net/auth.h"
#include "net/inbox.h"
#include "net/node.h"

namespace baton::pipeline {

struct ChainOptions {
  std::optional<net::AuthConfig> auth;  // the cluster secret or insecure mode (required)
  double connect_timeout_s = 30;        // connecting to all nodes, with retry and backoff
  double load_timeout_s = 300;          // Prepare -> Ready for every node
  // Liveness: a link silent this long is a frozen or unreachable node (closed, see chain.cpp).
  double heartbeat_timeout_s = 3;
  net::DType activations = net::DType::kF32;  // on the wire between stages
  int max_sequences = 1;                      // KV cache slots on every worker
  // One forward pass through the chain: a pass lost without a closed connection fails after this.
  std::chrono::milliseconds request_timeout{30000};
  int max_in_flight = 0;  // RemoteLayers passes in flight; <= 0: one per stage
  // Who this coordinator is to its workers (Prepare option `coordinator`): a worker held by
  // another instance refuses the load naming its holder. Empty: "<program> pid N on HOST".
  std::string coordinator_id;
  // Take workers held by another coordinator over (--take-over): that one is told and closed.
  bool take_over = false;
};

// "<program> pid N on HOST": a coordinator instance's default id.
std::string default_coordinator_id();

class Chain {
 public:
  // Connects and loads `stages` (in chain order) with `front`'s model identity and n_ctx;
  // throws baton::Error naming the node(s) that failed and why.
  Chain(const ModelFront& front, std::vector<StageAssignment> stages, ChainOptions options);
  ~Chain();  // Goodbye to every node, closes the connections
  Chain(const Chain&) = delete;
  Chain& operator=(const Chain&) = delete;

  const std::vector<StageAssignment>& stages() const { return plan_; }
  RemoteLayers& layers() { return layers_; }
  int64_t n_ctx() const { return n_ctx_; }

  // Asks every node for its counters (in plan order).
  std::vector<StageStats> stats();
  // The coordinator's measurements; thread-safe, no network.
  ClusterMetrics metrics() const;
  // Gives up on node `node_id` (the registry saw it go silent, e.g. a frozen process whose
  // connection stays open): its link is closed and a pass waiting on the chain fails within
  // ~100 ms naming it, instead of after request_timeout. Thread-safe; unknown ids are ignored.
  void abandon_node(const std::string& node_id, const std::string& reason);
  // Why the pipeline cannot serve now ("node node-02 (127.0.0.1:8011) is gone: ..."), naming
  // every lost node; nullopt while every link is open. Thread-safe.
  std::optional<std::string> broken() const;
  // Reconnects the lost nodes (each within min(connect_timeout, 2 s)) and loads the plan again
  // as one transaction: nodes that kept their range re-adopt it (KV caches cleared), restarted
  // ones load it, a node held by another coordinator refuses. Returns false with nothing to
  // repair; throws baton::Error naming what failed (the links that work stay open). Like
  // forward(): no pass in flight, not concurrently with the runner.
  bool repair();
  const std::string& coordinator_id() const { return options_.coordinator_id; }
  net::DType activations() const { return activations_; }

 private:
  friend class RemoteLayers;
  struct Link;
  void connect_all();
  // Connects link i (new or lost) within `deadline`; throws naming the node.
  void connect_link(size_t i, std::chrono::steady_clock::time_point deadline, double timeout_s);
  // initial: a failure closes every link (the constructor throws); a repair keeps them.
  void load_all(bool initial);
  void close_all(const std::string& reason);
  std::string name(size_t i) const;  // "node node-02 (127.0.0.1:8011)"
  // Throws if some connection has closed, naming its node.
  void check_links() const;
  // Pops the inbox for up to `wait`, failing on closed links; nullopt on timeout.
  std::optional<net::Incoming> next_message(std::chrono::milliseconds wait);
  size_t link_index(const net::ConnectionPtr& c) const;
  // Sends StatsRequest to every node and waits for every Stats reply.
  std::vector<StageStats> round_trip_stats(const char* what);

  ChainOptions options_;
  // A worker's take-over notice (ErrorReport kTakenOver) by connection id, noted on the I/O
  // thread so the close that follows it is reported with the reason.
  mutable std::mutex notices_mutex_;
  std::map<uint64_t, std::string> taken_over_;
  std::string not_loaded_;  // guarded by notices_mutex_: why the last repair's load failed
  net::DType activations_ = net::DType::kF32;
  mutable std::mutex metrics_mutex_;
  ClusterMetrics metrics_;
  std::vector<StageAssignment> plan_;
  std::string identity_;    // the front's model identity
  std::string model_path_;  // the coordinator's copy (Prepare's path hint)
  int64_t n_embd_ = 0;
  int64_t n_ctx_ = 0;
  net::Inbox inbox_;
  std::unique_ptr<net::Node> node_;
  std::vector<std::shared_ptr<Link>> links_;
  RemoteLayers layers_{*this};
};

}  // namespace baton::pipeline
