// Worker::Load, the one layer range a worker holds for its coordinator: shared by worker.cpp
// (lifecycle, dispatch), worker_prepare.cpp (two-phase load, re-adoption) and worker_forward.cpp
// (passes). Internal to engine/pipeline.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/cluster/stage_assignment.h"
#include "engine/model/model_config.h"
#include "engine/model/stage.h"
#include "engine/pipeline/worker.h"
#include "net/node.h"

namespace baton::pipeline {

struct Worker::Load {
  uint64_t load_id = 0;
  bool committed = false;
  ModelConfig config;
  LayerSpan layers;  // what the Prepare asked for (the wire's inclusive range, converted once)
  std::unique_ptr<Stage> stage;
  net::ConnectionPtr coordinator;
  std::string holder;  // the coordinator instance that made it (Prepare option `coordinator`)
  // Committed once: a later Prepare of the same holder (or, kept without a coordinator, of any)
  // for the same layers re-adopts the stage, and a Rollback of such a re-adoption keeps it.
  bool reusable = false;
  net::ConnectionPtr next;  // nullptr: last stage
  std::string next_name;
  net::DType activations = net::DType::kF32;  // what this stage sends on
  int max_sequences = 1;
  // Forwards and ResetSequences that reached this stage before its Commit, in arrival order:
  // the Commit comes straight from the coordinator while they come through the earlier stages,
  // and two TCP connections keep no order between them.
  std::vector<net::Incoming> held;
};

}  // namespace baton::pipeline
