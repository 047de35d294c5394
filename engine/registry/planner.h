// Plans contiguous layer ranges over the nodes that registered: in proportion to each node's
// measured speed (memory free when no speed was measured; speeds clamped to 1/4..4x of the median,
// outliers of a noisy calibration), never exceeding a node's free memory
// (weights of its layers from the GGUF tensor sizes + KV cache for n_ctx x slots + headroom),
// and only on nodes with the coordinator's model identity that can serve the layers (a shard
// serves only its own range). Refuses with a message saying how much memory is missing.
//
// Method: nodes ordered by (first servable layer, id); a dynamic programme over (node, layer
// boundary) minimises sum(n_i^2 / w_i), whose unconstrained optimum is n_i proportional to w_i,
// subject to the memory and servable-range constraints; nodes may get no layers (skipped).
// Pure function of its inputs: unit-tested with synthetic NodeRecords.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/registry/registry_backend.h"
#include "gguf/gguf_file.h"

namespace baton::registry {

// What each layer of a model costs a worker.
struct ModelFootprint {
  std::string model_identity;
  int64_t n_layer = 0;
  std::vector<uint64_t> layer_bytes;  // [n_layer] weights of blk.N.*
  uint64_t shared_bytes = 0;          // non-block tensors every worker binds (e.g. rope_freqs), not
                                      // the embeddings / output head (those stay on the coordinator)
  uint64_t kv_bytes_per_layer = 0;    // K+V (F16) for n_ctx positions x max_sequences slots
  int64_t n_ctx = 0;
  int max_sequences = 1;

  // From the coordinator's copy of the model.
  static ModelFootprint from_file(const gguf::GgufFile& file, int64_t n_ctx, int max_sequences);
};

struct PlannerOptions {
  uint64_t headroom_bytes = 64ull << 20;  // per node: scratch, buffers, the process itself
  double headroom_fraction = 0.05;        // plus this share of the node's weights + KV
};

struct PlannedNode {
  NodeRecord record;
  int64_t first = 0, last = 0;  // [first, last)
  uint64_t bytes_needed = 0;    // weights + KV + headroom of its range
};

// Bytes a node needs to hold [first, last).
uint64_t range_bytes(const ModelFootprint& model, const PlannerOptions& options, int64_t first, int64_t last);

// Throws baton::Error when no plan exists: no eligible node (each skipped node and why), or
// not enough memory ("... X GiB missing"), or ranges that cannot be made contiguous.
std::vector<PlannedNode> plan_nodes(const std::vector<NodeRecord>& nodes, const ModelFootprint& model,
                                    const PlannerOptions& options = {});

// A node whose layer range is fixed by the YAML (a mixed topology): it gets exactly [first, last).
struct PinnedRange {
  NodeRecord record;            // from its registration, or id/host/port from the YAML
  int64_t first = 0, last = 0;  // [first, last)
};

// Mixed topology: the layers outside the pinned ranges are planned over `nodes` (gap by gap in
// layer order, like plan_nodes on that part of the model; a node serves at most one gap), and the
// whole plan is returned in layer order. Pinned ranges must not overlap (baton::Error naming the
// nodes); a gap no node can take throws like plan_nodes, naming the gap. Nodes that are also
// pinned are not planned again.
std::vector<PlannedNode> plan_around(const std::vector<PinnedRange>& pinned, const std::vector<NodeRecord>& nodes,
                                     const ModelFootprint& model, const PlannerOptions& options = {});

// The plan as a Markdown table: | id | address | memory | layers | port | role |, with the
// coordinator's row first (memory "-", layers "embeddings, head").
std::string format_plan_table(const std::vector<PlannedNode>& plan, const std::string& coordinator_address);

std::string format_bytes(uint64_t bytes);  // "1.50 GiB", "12.0 MiB", "512 B"

}  // namespace baton::registry
