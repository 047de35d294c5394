// The one layer planner of the engine: the static path (a YAML node list, by weight), the
// registry (the workers that joined, by memory and speed, around pinned ranges, and the minimal
// re-plan after a loss) and `engine-ctl doctor` all plan here. Pure functions of their inputs,
// free of networking; ranges are the half-open LayerSpan, converted to the inclusive
// [first, last] only where people read them (messages, format_plan_table) and where a node's
// record says which layers it can serve (the wire's NodeStatus: served_layers / set_served_layers).
//
// By memory and speed (plan_nodes): contiguous layer ranges in proportion to each node's measured
// speed (memory free when no speed was measured; speeds clamped to 1/4..4x of the median,
// outliers of a noisy calibration), never exceeding a node's free memory (weights of its layers
// from the GGUF tensor sizes + KV cache for n_ctx x slots + headroom), and only on nodes with the
// coordinator's model identity that can serve the layers (a shard serves only its own range).
// Refuses with a message saying how much memory is missing.
// Method: nodes ordered by (first servable layer, id); a dynamic programme over (node, layer
// boundary) minimises sum(n_i^2 / w_i), whose unconstrained optimum is n_i proportional to w_i,
// subject to the memory and servable-range constraints; nodes may get no layers (skipped).
#pragma once

#include <cstdint>
#include <cstddef>
#include <string>
#include <vector>

#include "engine/cluster/stage_assignment.h"
#include "gguf/gguf_file.h"
#include "net/messages.h"

namespace baton {

struct ClusterConfig;

// What a node announced (the wire's NodeStatus): address, memory, speed, servable layers.
using NodeRecord = net::NodeStatus;

// The layers a record says its node can serve (its first range; empty when none), and the
// reverse: the only places the planner reads or writes the record's inclusive ranges.
LayerSpan served_layers(const NodeRecord& record);
void set_served_layers(NodeRecord& record, LayerSpan layers);
// Whether the record's node can serve every layer of `layers`.
bool serves(const NodeRecord& record, LayerSpan layers);

// What each layer of a model costs a worker.
struct ModelFootprint {
  std::string model_identity;
  int64_t n_layer = 0;
  std::vector<uint64_t> layer_bytes;  // [n_layer] weights of blk.N.*
  std::vector<double> layer_flops;    // [n_layer] FLOP per token of blk.N.* (2 x its matrices' elements)
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

// One stage of a plan over registered nodes: the StageAssignment (id, address, layers) and the
// record it was planned from. A pinned node (a mixed topology's listed node with layers) is one
// too: its record is its registration, or id/host/port from the YAML.
struct PlannedStage {
  StageAssignment stage;
  NodeRecord record{};
  uint64_t bytes_needed = 0;  // weights + KV + headroom of its layers
};

// The stage of `record`'s node serving `layers` (its address taken from the record).
PlannedStage planned_stage(const NodeRecord& record, LayerSpan layers, uint64_t bytes_needed = 0);
// The StageAssignments of a plan, in order.
std::vector<StageAssignment> stages_of(const std::vector<PlannedStage>& plan);

// Bytes a node needs to hold `layers`.
uint64_t range_bytes(const ModelFootprint& model, const PlannerOptions& options, LayerSpan layers);

// By weight, for a YAML node list: layer spans for every node in listed order. Explicit ranges
// must cover 0..n_layer-1 exactly once (the error names the missing or doubly assigned layers and
// the nodes involved); `auto` on every node splits the layers contiguously in proportion to weight
// (each node >= 1 layer). Mixing explicit and auto ranges is refused.
std::vector<StageAssignment> plan_layers(const ClusterConfig& config, int64_t n_layer);

// By memory and speed. Throws baton::Error when no plan exists: no eligible node (each skipped
// node and why), or not enough memory ("... X GiB missing"), or ranges that cannot be contiguous.
std::vector<PlannedStage> plan_nodes(const std::vector<NodeRecord>& nodes, const ModelFootprint& model,
                                     const PlannerOptions& options = {});

// plan_nodes over `span` of the model alone (each node's servable layers clipped to it), at most
// `max_nodes` of `nodes` offered; the stages come back in the model's layer numbers. Throws like
// plan_nodes.
std::vector<PlannedStage> plan_span(const std::vector<NodeRecord>& nodes, LayerSpan span, const ModelFootprint& model,
                                    const PlannerOptions& options, size_t max_nodes = SIZE_MAX);

// Mixed topology: each pinned stage keeps exactly its layers; the layers outside them are planned
// over `nodes` (gap by gap in layer order, like plan_nodes on that part of the model; a node serves
// at most one gap), and the whole plan is returned in layer order. Pinned ranges must not overlap
// (baton::Error naming the nodes); a gap no node can take throws like plan_nodes, naming the gap.
// Nodes that are also pinned are not planned again.
std::vector<PlannedStage> plan_around(const std::vector<PlannedStage>& pinned, const std::vector<NodeRecord>& nodes,
                                      const ModelFootprint& model, const PlannerOptions& options = {});

// The re-plan after nodes are lost, moving as few layers as possible (issue 29: losing 2 of 35
// nodes reloaded 19 of the 33 that remained, gigabytes from disk each at 70B).
// Every stage of the current plan whose node is still usable (and still serves those layers) stays
// exactly as it is, so its worker re-adopts its load. Only the layers left uncovered — the lost
// nodes' spans — are placed, gap by gap in layer order:
//   1. on nodes that hold no stage (spares, new joiners), planned over the gap like plan_nodes();
//   2. else on one kept neighbour of the gap (the stage that ends where the gap begins, or the one
//      that begins where it ends), the one with the lower sum(n^2/speed) cost whose memory and
//      servable layers allow it; both neighbours share the gap only when neither can take it alone.
// Pinned stages stay and never grow. When a gap can be filled neither way, the result is a fresh
// plan_around() over every node (the old behaviour).
std::vector<PlannedStage> plan_keeping(const std::vector<PlannedStage>& current,
                                       const std::vector<PlannedStage>& pinned, const std::vector<NodeRecord>& nodes,
                                       const ModelFootprint& model, const PlannerOptions& options = {});

// How many nodes of `next` already had a stage in `current` but with other layers (each of those
// workers reloads its layers); nodes new to the plan are not counted.
size_t count_reloaded(const std::vector<PlannedStage>& current, const std::vector<PlannedStage>& next);

// The plan as a Markdown table: | id | address | memory | layers | port | role |, with the
// coordinator's row first (memory "-", layers "embeddings, head").
std::string format_plan_table(const std::vector<PlannedStage>& plan, const std::string& coordinator_address);

std::string format_bytes(uint64_t bytes);  // "1.50 GiB", "12.0 MiB", "512 B"

}  // namespace baton
