#include "engine/pipeline/model_runner.h"

namespace baton::pipeline {

LayerRunner& ModelRunner::runner() {
  if (cluster) return cluster->layers();
  return local->layers();
}

ModelRunner open_runner(std::shared_ptr<ModelFront> front, const ClusterConfig* config, const RunnerOptions& options) {
  ModelRunner m;
  m.front = front;
  if (config) {
    ClusterOptions co = options.cluster;
    co.max_sequences = options.max_sequences;
    m.cluster = std::make_unique<Cluster>(std::move(front), *config, co);
  } else {
    LocalModelOptions lo;
    lo.max_sequences = options.max_sequences;
    lo.layer_ranges = options.layer_ranges;
    m.local = std::make_unique<LocalModel>(std::move(front), lo);
  }
  return m;
}

}  // namespace baton::pipeline
