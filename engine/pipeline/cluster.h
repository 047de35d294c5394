// The coordinator's side of the pipeline: a Cluster opens the coordinator's model (tokenizer,
// embeddings, output head; no transformer layers), plans the layer ranges of a ClusterConfig,
// connects to every engine-worker and loads them as one transaction (Prepare to all -> Ready
// from all -> Commit; any Failed, closed connection or timeout -> Rollback to all and a
// baton::Error naming the node(s) and why). Its RemoteLayers runs forward passes along the
// chain of workers, so the Generator and the bench work unchanged on a cluster; its
// submit()/finish() keep several micro-batches in the chain at once (the serving scheduler).
//
// Not thread-safe: forward / submit / finish / reset / stats() from one thread at a time;
// metrics() alone may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/cluster/cluster_config.h"
#include "engine/model/model_config.h"
#include "engine/model/model_head.h"
#include "engine/runtime/layer_runner.h"
#include "engine/tokenizer/tokenizer.h"
#include "gguf/gguf_file.h"
#include "kernels/core/thread_pool.h"
#include "net/inbox.h"
#include "net/node.h"

namespace baton::pipeline {

struct ClusterOptions {
  int threads = 0;         // coordinator threads for embedding and head; <= 0: all cores
  int64_t n_ctx = 0;       // <= 0: the model's, capped at 4096; sent to every worker
  int max_sequences = 1;   // KV cache slots on every worker
  // One forward pass through the chain (engine-coordinator/engine-run/engine-bench
  // --request-timeout): a pass lost without a closed connection fails after this long.
  std::chrono::milliseconds request_timeout{30000};
  int max_in_flight = 0;   // RemoteLayers passes in flight; <= 0: one per stage
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
    "take over workers that another coordinator holds (it is told, logs it and answers 503; default: refuse, naming it)";
inline constexpr const char* kRequestTimeoutHelp =
    "seconds one forward pass through the workers may take before its request fails (default 30)";

// "<program> pid N on HOST": a coordinator instance's default id.
std::string default_coordinator_id();

// One worker's counters (Stats reply), cumulative since it started.
struct StageStats {
  std::string node_id;
  std::map<std::string, double> values;  // compute_ms, forwards, tokens, bytes_in, bytes_out
};

// Measured on the coordinator from the passes it completed (cumulative since the load), with
// each stage's own figures from the Hidden timing trailer (engine/pipeline/wire.h). Every
// duration is a difference of two readings of one machine's clock.
struct StageMetrics {
  std::string node_id;
  double compute_ms = 0;    // its layers
  double residence_ms = 0;  // frame received -> result handed to the connection (queue + compute + encode)
  double bytes_out = 0;     // activation bytes it sent (to the next stage, or Hidden to the coordinator)
};
// One hop (coordinator -> first stage, stage i -> stage i+1, last stage -> coordinator): the
// time from the sender's hand-over to the receiver's I/O thread having the whole frame, summed
// over the passes where the receiver had a clock estimate for that link (docs/PROTOCOL.md,
// "Per-hop network time"). |network_ms - true| <= error_ms.
struct HopMetrics {
  std::string from, to;   // node ids, or "coordinator"
  double network_ms = 0;  // sum of the per-pass estimates, each clamped to [0, that pass's all hops]
  double error_ms = 0;    // sum of their error bounds
  double bytes = 0;       // activation bytes over this hop (all passes)
  uint64_t passes = 0;    // passes measured
  uint64_t tokens = 0;    // their tokens
  uint64_t unmeasured = 0;  // passes without a clock estimate for this link
};
struct ClusterMetrics {
  uint64_t passes = 0;           // completed forward passes
  uint64_t tokens = 0;           // their tokens
  uint64_t failed_passes = 0;    // lost to an error
  double round_trip_ms = 0;      // coordinator: Forward handed to the connection -> Hidden received
  double network_ms = 0;         // round trip - sum of stage residences: all hops, wire + (de)serialisation
  double bytes_to_first = 0;     // activation bytes coordinator -> first stage
  std::vector<StageMetrics> stages;  // plan order
  std::vector<HopMetrics> hops;  // stages.size() + 1, chain order
  std::string activations;       // "f32", "f16" or "bf16"
  int max_in_flight = 1;
  int peak_in_flight = 0;        // most passes that were in the chain at once
};

class Cluster;

class RemoteLayers : public LayerRunner {
 public:
  explicit RemoteLayers(Cluster& cluster) : cluster_(cluster) {}
  // submit() + finish(); refused while submitted passes are unfinished.
  void forward(const TokenBatch& batch, std::vector<float>& hidden, std::vector<float>& out_rows) override;
  // ResetSequence to the first stage; every stage applies it and passes it on along the chain,
  // ordered with the Forwards: it takes effect after every pass submitted before it and before
  // every pass submitted after it, at every stage. Does not wait (no round trip).
  void reset_sequence(uint64_t seq_id) override;
  int64_t n_ctx() const override;

  // Sends a Forward (micro-batch id = a counter) to the first stage without waiting.
  // finish() waits for the oldest pass's Hidden (replies are matched by id; the chain keeps
  // them in order). A closed connection, an ErrorReport about an unfinished pass, or the
  // request timeout of the oldest pass throws baton::Error naming the node, and every
  // unfinished pass is lost.
  int max_in_flight() const override;
  void submit(const TokenBatch& batch, std::vector<float>& hidden) override;
  void finish(std::vector<float>& out_rows) override;
  size_t in_flight() const { return passes_.size(); }

 private:
  friend class Cluster;
  struct Pass {
    uint64_t id = 0;
    size_t n_tokens = 0, n_outputs = 0;
    std::chrono::steady_clock::time_point sent;
    std::optional<net::Incoming> reply;  // its Hidden, once arrived
  };
  // Files a Hidden with its pass (drops stale ones); an ErrorReport about an unfinished pass
  // (or about none in particular) fails them all.
  void take(net::Incoming& in);
  [[noreturn]] void fail_all(const std::string& why);

  Cluster& cluster_;
  uint64_t next_micro_batch_ = 1;
  std::deque<Pass> passes_;
};

class Cluster {
 public:
  // Connects and loads; throws baton::Error naming the node(s) that failed and why.
  Cluster(const ClusterConfig& config, const ClusterOptions& options = {});
  ~Cluster();  // Goodbye to every node, closes the connections
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  const std::vector<NodePlan>& plan() const { return plan_; }
  const ModelConfig& config() const { return config_; }
  const std::shared_ptr<const gguf::GgufFile>& file() const { return file_; }
  const tokenizer::Tokenizer& tokenizer() const { return *tokenizer_; }
  kernels::ThreadPool& pool() { return *pool_; }
  ModelHead& head() { return *head_; }
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
  void connect_all(const ClusterConfig& config);
  // Connects link i (new or lost) within `deadline`; throws naming the node.
  void connect_link(size_t i, std::chrono::steady_clock::time_point deadline, double timeout_s);
  // initial: a failure closes every link (the constructor throws); a repair keeps them.
  void load_all(const ClusterConfig& config, bool initial);
  void close_all(const std::string& reason);
  std::string name(size_t i) const;  // "node node-02 (127.0.0.1:8011)"
  // Throws if some connection has closed, naming its node.
  void check_links() const;
  // Pops the inbox for up to `wait`, failing on closed links; nullopt on timeout.
  std::optional<net::Incoming> next_message(std::chrono::milliseconds wait);
  size_t link_index(const net::ConnectionPtr& c) const;
  // Sends StatsRequest to every node and waits for every Stats reply.
  std::vector<StageStats> round_trip_stats(const char* what);

  ClusterOptions options_;
  ClusterConfig cluster_config_;  // for repair()
  // A worker's take-over notice (ErrorReport kTakenOver) by connection id, noted on the I/O
  // thread so the close that follows it is reported with the reason.
  mutable std::mutex notices_mutex_;
  std::map<uint64_t, std::string> taken_over_;
  std::string not_loaded_;  // guarded by notices_mutex_: why the last repair's load failed
  net::DType activations_ = net::DType::kF32;
  mutable std::mutex metrics_mutex_;
  ClusterMetrics metrics_;
  std::vector<NodePlan> plan_;
  std::shared_ptr<const gguf::GgufFile> file_;
  ModelConfig config_;
  std::string identity_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::unique_ptr<kernels::ThreadPool> pool_;
  std::unique_ptr<ModelHead> head_;
  int64_t n_ctx_ = 0;
  net::Inbox inbox_;
  std::unique_ptr<net::Node> node_;
  std::vector<std::shared_ptr<Link>> links_;
  RemoteLayers layers_{*this};
};

}  // namespace baton::pipeline
