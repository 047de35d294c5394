// Everything needed to run one model in this process: its front (file, config, tokenizer,
// thread pool, output head; engine/runtime/model_front.h) and all layers. What engine-run,
// engine-bench and the single-node server build from `-m FILE`.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/model/model_head.h"
#include "engine/runtime/local_layers.h"
#include "engine/runtime/model_front.h"
#include "engine/runtime/thread_count.h"
#include "engine/tokenizer/tokenizer.h"
#include "gguf/gguf_file.h"
#include "kernels/core/thread_pool.h"

namespace baton {

struct LocalModelOptions {
  int threads = 0;    // <= 0: hardware concurrency
  int64_t n_ctx = 0;  // <= 0: the model's, capped at 4096
  int max_sequences = 1;
  std::vector<LayerSpan> layer_ranges;                     // stages in order; empty: one stage
  WeightPlacement placement = WeightPlacement::kResident;  // --mmap: kMapped (engine/model/weights.h)
};

class LocalModel {
 public:
  // Opens its own front. Throws baton::Error naming what is wrong with the file.
  LocalModel(const std::string& path, const LocalModelOptions& options);
  // Every layer of `front`'s model in this process (options' threads, n_ctx and placement are
  // the front's).
  LocalModel(std::shared_ptr<ModelFront> front, const LocalModelOptions& options);

  const std::shared_ptr<const gguf::GgufFile>& file() const { return front_->file(); }
  const ModelConfig& config() const { return front_->config(); }
  const tokenizer::Tokenizer& tokenizer() const { return front_->tokenizer(); }
  kernels::ThreadPool& pool() { return front_->pool(); }
  ModelHead& head() { return front_->head(); }
  LocalLayers& layers() { return *layers_; }
  const std::shared_ptr<ModelFront>& front() const { return front_; }

 private:
  std::shared_ptr<ModelFront> front_;
  std::unique_ptr<LocalLayers> layers_;
};

}  // namespace baton
