// The coordinator's part of one model, opened once per process: the mapped file, its config,
// tokenizer, thread pool, embeddings + output head, the model's identity (what workers check
// in Prepare) and the context served. LocalModel (every layer here), a pipeline::Chain (the
// layers on workers) and registry::DynamicCluster (a chain per plan) share it, so a re-plan
// never opens the file or copies the head again.
// Thread-safety: immutable after construction except head() and pool(), which the one thread
// running the model's passes uses.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/model/model_config.h"
#include "engine/model/model_head.h"
#include "engine/runtime/thread_count.h"
#include "engine/model/weights.h"
#include "engine/tokenizer/tokenizer.h"
#include "gguf/gguf_file.h"
#include "kernels/core/thread_pool.h"

namespace baton {

struct ModelFrontOptions {
  int threads = 0;                                         // <= 0: hardware concurrency
  int64_t n_ctx = 0;                                       // <= 0: the model's, capped at 4096
  WeightPlacement placement = WeightPlacement::kResident;  // --mmap: kMapped (engine/model/weights.h)
};

// The front's options out of a tool's or a runner's options: threads and n_ctx, and the placement
// where those options have one (a cluster's layers are on its workers, so ClusterOptions has none).
template <class Options>
ModelFrontOptions front_options(const Options& options) {
  ModelFrontOptions fo;
  fo.threads = options.threads;
  fo.n_ctx = options.n_ctx;
  if constexpr (requires { options.placement; }) fo.placement = options.placement;
  return fo;
}

class ModelFront {
 public:
  // Throws baton::Error naming what is wrong with the file.
  ModelFront(const std::string& path, const ModelFrontOptions& options);
  ModelFront(const ModelFront&) = delete;
  ModelFront& operator=(const ModelFront&) = delete;

  const std::shared_ptr<const gguf::GgufFile>& file() const { return file_; }
  const std::string& path() const { return path_; }
  const ModelConfig& config() const { return config_; }
  const tokenizer::Tokenizer& tokenizer() const { return *tokenizer_; }
  kernels::ThreadPool& pool() { return *pool_; }
  ModelHead& head() { return *head_; }
  // gguf::model_identity of the file: workers refuse a Prepare for another model.
  const std::string& identity() const { return identity_; }
  // The context served: the requested n_ctx, or the model's capped at 4096 (effective_n_ctx).
  int64_t n_ctx() const { return n_ctx_; }
  WeightPlacement placement() const { return placement_; }

 private:
  std::string path_;
  std::shared_ptr<const gguf::GgufFile> file_;
  ModelConfig config_;
  std::string identity_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::unique_ptr<kernels::ThreadPool> pool_;
  std::unique_ptr<ModelHead> head_;
  int64_t n_ctx_ = 0;
  WeightPlacement placement_ = WeightPlacement::kResident;
};

}  // namespace baton
