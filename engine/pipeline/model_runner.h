// The model front + runner pair the tools run a model with: every layer in this process
// (-m FILE: a LocalModel) or on a fixed cluster of engine-workers (--config: a pipeline::Cluster),
// on one front opened first. engine-run, engine-bench and engine-coordinator (ServedModel, which
// adds a registry::DynamicCluster for `nodes: auto`) build it the same way.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/cluster/cluster_config.h"
#include "engine/pipeline/cluster.h"
#include "engine/runtime/layer_runner.h"
#include "engine/runtime/local_model.h"
#include "engine/runtime/model_front.h"

namespace baton::pipeline {

struct RunnerOptions {
  int max_sequences = 1;                // KV cache slots (in this process or on every worker)
  std::vector<LayerSpan> layer_ranges;  // local: the stages in order; empty: one
  // A cluster's: --take-over, --request-timeout, activations, coordinator id (threads and n_ctx
  // are the front's).
  ClusterOptions cluster;
};

struct ModelRunner {
  std::shared_ptr<ModelFront> front;
  std::unique_ptr<LocalModel> local;  // -m FILE
  std::unique_ptr<Cluster> cluster;   // --config with a node list

  LayerRunner& runner();
};

// config: nullptr for every layer in this process. Throws baton::Error like LocalModel and
// Cluster (a node that failed to load, named).
ModelRunner open_runner(std::shared_ptr<ModelFront> front, const ClusterConfig* config, const RunnerOptions& options);

}  // namespace baton::pipeline
