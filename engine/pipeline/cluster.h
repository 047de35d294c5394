// A fixed cluster (a YAML node list, engine-coordinator/engine-run/engine-bench --config): the
// edge that turns a ClusterConfig into a model front (engine/runtime/model_front.h) and a
// pipeline::Chain (chain.h) over its stage assignments (plan_layers -> StageAssignment). The
// chain connects, loads as one transaction and runs the passes; this class only keeps the two
// together and forwards to them, so the Generator and the bench work unchanged on a cluster.
//
// Not thread-safe: layers() / stats() / repair() from one thread at a time; metrics(),
// broken() and abandon_node() may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/cluster/cluster_config.h"
#include "engine/cluster/stage_assignment.h"
#include "engine/pipeline/chain.h"
#include "engine/pipeline/chain_metrics.h"
#include "engine/pipeline/remote_layers.h"
#include "engine/runtime/model_front.h"

namespace baton::pipeline {

struct ClusterOptions {
  int threads = 0;        // coordinator threads for embedding and head; <= 0: all cores
  int64_t n_ctx = 0;      // <= 0: the model's, capped at 4096; sent to every worker
  int max_sequences = 1;  // KV cache slots on every worker
  // One forward pass through the chain (engine-coordinator/engine-run/engine-bench
  // --request-timeout): a pass lost without a closed connection fails after this long.
  std::chrono::milliseconds request_timeout{30000};
  int max_in_flight = 0;  // RemoteLayers passes in flight; <= 0: one per stage
  // Activations on the wire; nullopt: the YAML's cluster.activations (default f32, exact).
  std::optional<net::DType> activations;
  // Who this coordinator is to its workers (Prepare option `coordinator`): a worker held by
  // another instance refuses the load naming its holder. Empty: "<program> pid N on HOST".
  // Pipelines of one coordinator (a DynamicCluster's re-plans) share one id.
  std::string coordinator_id;
  // Take workers held by another coordinator over (--take-over): that one is told and closed.
  bool take_over = false;
};

// The tools' --take-over and --request-timeout help, one wording for all.
inline constexpr const char* kTakeOverHelp =
    "take over workers that another coordinator holds (it is told, logs it and answers 503; default: refuse, naming "
    "it)";
inline constexpr const char* kRequestTimeoutHelp =
    "seconds one forward pass through the workers may take before its request fails (default 30)";

// The chain's options from the YAML (secret or insecure, timeouts, activations) and the
// command line's; throws baton::Error naming the file for a missing secret or bad activations.
ChainOptions chain_options(const ClusterConfig& config, const ClusterOptions& options);

class Cluster {
 public:
  // Opens the model front and connects and loads; throws baton::Error naming the node(s) that
  // failed and why.
  Cluster(const ClusterConfig& config, const ClusterOptions& options = {});
  // Likewise on a front already open (its threads and n_ctx are the front's).
  Cluster(std::shared_ptr<ModelFront> front, const ClusterConfig& config, const ClusterOptions& options = {});
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  const std::vector<StageAssignment>& plan() const { return plan_; }
  const ModelConfig& config() const { return front_->config(); }
  const std::shared_ptr<const gguf::GgufFile>& file() const { return front_->file(); }
  const tokenizer::Tokenizer& tokenizer() const { return front_->tokenizer(); }
  kernels::ThreadPool& pool() { return front_->pool(); }
  ModelHead& head() { return front_->head(); }
  RemoteLayers& layers() { return chain_->layers(); }
  int64_t n_ctx() const { return chain_->n_ctx(); }
  const std::shared_ptr<ModelFront>& front() const { return front_; }
  Chain& chain() { return *chain_; }

  // The chain's (see chain.h).
  std::vector<StageStats> stats() { return chain_->stats(); }
  ClusterMetrics metrics() const { return chain_->metrics(); }
  void abandon_node(const std::string& node_id, const std::string& reason) { chain_->abandon_node(node_id, reason); }
  std::optional<std::string> broken() const { return chain_->broken(); }
  bool repair() { return chain_->repair(); }
  const std::string& coordinator_id() const { return chain_->coordinator_id(); }
  net::DType activations() const { return chain_->activations(); }

 private:
  std::shared_ptr<ModelFront> front_;
  std::vector<StageAssignment> plan_;
  std::unique_ptr<Chain> chain_;
};

}  // namespace baton::pipeline
