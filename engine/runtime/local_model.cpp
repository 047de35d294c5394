#include "engine/runtime/local_model.h"

namespace baton {

LocalModel::LocalModel(const std::string& path, const LocalModelOptions& options)
    : file_(gguf::GgufFile::open(path)), config_(ModelConfig::from_metadata(file_->metadata())) {
  tokenizer_ = tokenizer::Tokenizer::from_metadata(file_->metadata());
  pool_ = std::make_unique<kernels::ThreadPool>(options.threads > 0 ? options.threads : default_thread_count());
  head_ = std::make_unique<ModelHead>(file_, config_, *pool_, options.placement);
  StageOptions stage_options;
  stage_options.n_ctx = options.n_ctx;
  stage_options.max_sequences = options.max_sequences;
  stage_options.placement = options.placement;
  layers_ = std::make_unique<LocalLayers>(file_, config_, stage_options, *pool_, options.layer_ranges);
}

}  // namespace baton
