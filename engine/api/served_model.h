// The model behind the HTTP API and everything that serves it: the weights (in this process
// or on a cluster of workers), tokenizer, chat template, the continuous-batching scheduler and
// the ClusterView for /health. Built from a GGUF file (local mode) or a cluster topology.
// Thread-safety: the accessors are safe from any thread (the scheduler and views synchronise).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/cluster/cluster_config.h"
#include "engine/cluster/cluster_view.h"
#include "engine/pipeline/cluster.h"
#include "engine/runtime/local_model.h"
#include "engine/serving/scheduler.h"

namespace baton::api {

// What GET /v1/models says about the model.
struct ModelInfo {
  std::string id;       // --alias, default the file name without .gguf
  std::string path;     // the GGUF file (the coordinator's copy in cluster mode)
  int64_t created = 0;  // file modification time (unix seconds)
  std::string owned_by = "baton";
  uint64_t size_bytes = 0;   // GGUF file(s) on disk
  std::string quantization;  // "Q4_K_M", "F32", ... (general.file_type, else the dominant tensor type)
  int64_t n_ctx = 0;         // context served
  int64_t n_ctx_train = 0;
  uint64_t n_params = 0;  // elements of every tensor
  int64_t n_layer = 0;
  int64_t kv_dim = 0;  // K (and V) values per position and layer
  int64_t n_vocab = 0;
  std::string arch;
};

// Reads the ModelInfo fields from the file; id = alias or the file stem.
ModelInfo describe_model(const gguf::GgufFile& file, const ModelConfig& config, const std::string& alias,
                         int64_t n_ctx);

struct ServeOptions {
  std::string alias;                                       // model id; "" = file stem
  std::string chat_template;                               // by name; "" = the model's own
  serving::SchedulerOptions scheduler;                     // slots, queue limit, n_batch
  std::string model_draft;                                 // --model-draft: drafts for scheduler.speculation's kDraft
  int threads = 0;                                         // <= 0: all cores
  int64_t n_ctx = 0;                                       // <= 0: the model's, capped at 4096
  WeightPlacement placement = WeightPlacement::kResident;  // local mode (--mmap: kMapped)
  bool take_over = false;  // cluster mode: take workers another coordinator holds (--take-over)
  std::chrono::milliseconds request_timeout{30000};  // cluster mode: one forward pass (--request-timeout)
};

class ServedModel {
 public:
  // Local mode: every layer in this process, with KV cache slots = options.scheduler.slots.
  static std::unique_ptr<ServedModel> open_local(const std::string& path, const ServeOptions& options);
  // Cluster mode: connects and loads the workers of `config` (throws naming the failing node).
  static std::unique_ptr<ServedModel> open_cluster(const ClusterConfig& config, const ServeOptions& options);
  ~ServedModel();

  const ModelInfo& info() const { return info_; }
  const tokenizer::Tokenizer& tokenizer() const { return *tokenizer_; }
  // The chat template, or nullptr when the model's is not recognised (chat_template_error()).
  const ChatTemplate* chat_template() const { return chat_template_ ? &*chat_template_ : nullptr; }
  const std::string& chat_template_error() const { return chat_template_error_; }
  serving::Scheduler& scheduler() { return *scheduler_; }
  const ClusterView& cluster_view() const { return *view_; }
  // Tells the view the address the HTTP server listens on (the coordinator node's address).
  void set_address(const std::string& address);
  // Per-worker counters for /metrics (the workers' Stats replies); empty in local mode.
  std::vector<pipeline::StageStats> stage_stats() const;
  // The coordinator's measurements of the pipeline (per-stage compute and residence, hop
  // bytes, network time); nullopt in local mode.
  std::optional<pipeline::ClusterMetrics> cluster_metrics() const;
  // The cluster's node plan (empty in local mode), for the start-up table.
  std::vector<StageAssignment> plan() const;

 private:
  ServedModel() = default;
  void init_common(const gguf::GgufFile& file, const ModelConfig& config, const ServeOptions& options, int64_t n_ctx,
                   const std::string& default_id);
  struct Parts;  // LocalModel or Cluster + views (defined in the .cpp)

  std::unique_ptr<Parts> parts_;
  ModelInfo info_;
  const tokenizer::Tokenizer* tokenizer_ = nullptr;
  std::optional<ChatTemplate> chat_template_;
  std::string chat_template_error_;
  std::unique_ptr<serving::Scheduler> scheduler_;  // destroyed before the model parts
  ClusterView* view_ = nullptr;
};

}  // namespace baton::api
