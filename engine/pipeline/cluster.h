// The coordinator's side of the pipeline: a Cluster opens the coordinator's model (tokenizer,
// embeddings, output head; no transformer layers), plans the layer ranges of a ClusterConfig,
// connects to every engine-worker and loads them as one transaction (Prepare to all -> Ready
// from all -> Commit; any Failed, closed connection or timeout -> Rollback to all and a
// baton::Error naming the node(s) and why). Its RemoteLayers runs forward passes along the
// chain of workers, so the Generator and the bench work unchanged on a cluster.
//
// Not thread-safe: one forward / reset / stats request at a time (RemoteLayers waits for each).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/cluster/cluster_config.h"
#include "engine/model/model_config.h"
#include "engine/model/model_head.h"
#include "engine/runtime/layer_runner.h"
#include "engine/tokenizer/tokenizer.h"
#include "gguf/gguf_file.h"
#include "kernels/thread_pool.h"
#include "net/inbox.h"
#include "net/node.h"

namespace baton::pipeline {

struct ClusterOptions {
  int threads = 0;         // coordinator threads for embedding and head; <= 0: all cores
  int64_t n_ctx = 0;       // <= 0: the model's, capped at 4096; sent to every worker
  int max_sequences = 1;   // KV cache slots on every worker
  std::chrono::milliseconds request_timeout{300000};  // one forward pass through the chain
};

// One worker's counters (Stats reply), cumulative since it started.
struct StageStats {
  std::string node_id;
  std::map<std::string, double> values;  // compute_ms, forwards, tokens, bytes_in, bytes_out
};

class Cluster;

class RemoteLayers : public LayerRunner {
 public:
  explicit RemoteLayers(Cluster& cluster) : cluster_(cluster) {}
  // Sends the batch to the first stage and waits for the last stage's Hidden. Throws
  // baton::Error naming the node on an ErrorReport, a closed connection or the timeout.
  void forward(const TokenBatch& batch, std::vector<float>& hidden, std::vector<float>& out_rows) override;
  // ResetSequence to every node, acknowledged (waits until every node has applied it).
  void reset_sequence(uint64_t seq_id) override;
  int64_t n_ctx() const override;

 private:
  Cluster& cluster_;
  uint64_t next_micro_batch_ = 1;
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

 private:
  friend class RemoteLayers;
  struct Link;
  void connect_all(const ClusterConfig& config);
  void load_all(const ClusterConfig& config);
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
