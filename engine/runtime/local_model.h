// Everything needed to run one model in this process: the mapped file, its config, tokenizer,
// thread pool, output head and all layers. What engine-run, engine-bench and the single-node
// server build from `-m FILE`.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/model/model_head.h"
#include "engine/runtime/local_layers.h"
#include "engine/tokenizer/tokenizer.h"
#include "gguf/gguf_file.h"
#include "kernels/core/thread_pool.h"

namespace baton {

struct LocalModelOptions {
  int threads = 0;                 // <= 0: hardware concurrency
  int64_t n_ctx = 0;               // <= 0: the model's, capped at 4096
  int max_sequences = 1;
  std::vector<std::pair<int64_t, int64_t>> layer_ranges;  // empty: one stage
  WeightPlacement placement = WeightPlacement::kResident;  // --mmap: kMapped (engine/model/weights.h)
};

class LocalModel {
 public:
  // Throws baton::Error naming what is wrong with the file.
  LocalModel(const std::string& path, const LocalModelOptions& options);

  const std::shared_ptr<const gguf::GgufFile>& file() const { return file_; }
  const ModelConfig& config() const { return config_; }
  const tokenizer::Tokenizer& tokenizer() const { return *tokenizer_; }
  kernels::ThreadPool& pool() { return *pool_; }
  ModelHead& head() { return *head_; }
  LocalLayers& layers() { return *layers_; }

 private:
  std::shared_ptr<const gguf::GgufFile> file_;
  ModelConfig config_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::unique_ptr<kernels::ThreadPool> pool_;
  std::unique_ptr<ModelHead> head_;
  std::unique_ptr<LocalLayers> layers_;
};

int default_thread_count();

}  // namespace baton
