#include "engine/runtime/model_front.h"

#include "engine/model/stage.h"
#include "gguf/model_identity.h"

namespace baton {

ModelFront::ModelFront(const std::string& path, const ModelFrontOptions& options)
    : path_(path),
      file_(gguf::GgufFile::open(path)),
      config_(ModelConfig::from_metadata(file_->metadata())),
      identity_(gguf::model_identity(*file_)),
      placement_(options.placement) {
  tokenizer_ = tokenizer::Tokenizer::from_metadata(file_->metadata());
  pool_ = std::make_unique<kernels::ThreadPool>(options.threads > 0 ? options.threads : default_thread_count());
  head_ = std::make_unique<ModelHead>(file_, config_, *pool_, options.placement);
  n_ctx_ = effective_n_ctx(config_, options.n_ctx);
}

}  // namespace baton
