#include "engine/runtime/local_model.h"

namespace baton {

LocalModel::LocalModel(const std::string& path, const LocalModelOptions& options)
    : LocalModel(std::make_shared<ModelFront>(path, front_options(options)), options) {}

LocalModel::LocalModel(std::shared_ptr<ModelFront> front, const LocalModelOptions& options) : front_(std::move(front)) {
  StageOptions stage_options;
  stage_options.n_ctx = front_->n_ctx();  // the front's (options.n_ctx when it opened the front)
  stage_options.max_sequences = options.max_sequences;
  stage_options.placement = front_->placement();
  layers_ = std::make_unique<LocalLayers>(front_->file(), front_->config(), stage_options, front_->pool(),
                                          options.layer_ranges);
}

}  // namespace baton
