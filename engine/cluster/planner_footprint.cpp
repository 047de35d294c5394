// The planner's memory rules (ModelFootprint, range_bytes), the record edge (a node's servable
// layers are inclusive on the wire) and the plan table people read.
#include <fmt/format.h>

#include "engine/cluster/planner.h"
#include "engine/model/model_config.h"
#include "engine/model/stage.h"
#include "gguf/model_identity.h"
#include "gguf/shard.h"

namespace baton {

LayerSpan served_layers(const NodeRecord& record) {
  if (record.layers.empty()) return {};
  return LayerSpan::from_inclusive(record.layers[0].first, record.layers[0].last);
}

void set_served_layers(NodeRecord& record, LayerSpan layers) {
  record.layers = {{static_cast<uint32_t>(layers.begin), static_cast<uint32_t>(layers.last())}};
}

bool serves(const NodeRecord& record, LayerSpan layers) {
  const LayerSpan can = served_layers(record);
  return !record.layers.empty() && can.begin <= layers.begin && can.end >= layers.end;
}

PlannedStage planned_stage(const NodeRecord& record, LayerSpan layers, uint64_t bytes_needed) {
  return {{record.node_id, record.host, record.port, layers}, record, bytes_needed};
}

std::vector<StageAssignment> stages_of(const std::vector<PlannedStage>& plan) {
  std::vector<StageAssignment> out;
  out.reserve(plan.size());
  for (const auto& p : plan) out.push_back(p.stage);
  return out;
}

std::string format_bytes(uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  if (b >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", bytes);
}

ModelFootprint ModelFootprint::from_file(const gguf::GgufFile& file, int64_t n_ctx, int max_sequences) {
  const ModelConfig config = ModelConfig::from_metadata(file.metadata());
  ModelFootprint m;
  m.model_identity = gguf::model_identity(file);
  m.n_layer = config.n_layer;
  m.layer_bytes.assign(static_cast<size_t>(config.n_layer), 0);
  m.layer_flops.assign(static_cast<size_t>(config.n_layer), 0.0);
  for (const auto& t : file.tensors()) {
    const int64_t il = gguf::tensor_layer(t.name);
    if (il >= 0 && il < config.n_layer) {
      m.layer_bytes[static_cast<size_t>(il)] += t.n_bytes;
      if (t.ne.size() >= 2) m.layer_flops[static_cast<size_t>(il)] += 2.0 * static_cast<double>(t.n_elements());
    } else if (il < 0 && t.name.rfind("token_", 0) != 0 && t.name.rfind("output", 0) != 0 &&
               t.name.rfind("position_embd", 0) != 0) {
      m.shared_bytes += t.n_bytes;
    }
  }
  m.n_ctx = effective_n_ctx(config, n_ctx);
  m.max_sequences = max_sequences < 1 ? 1 : max_sequences;
  m.kv_bytes_per_layer = 2ull * static_cast<uint64_t>(m.n_ctx) * static_cast<uint64_t>(config.kv_dim()) * 2ull *
                         static_cast<uint64_t>(m.max_sequences);
  return m;
}

uint64_t range_bytes(const ModelFootprint& model, const PlannerOptions& options, LayerSpan layers) {
  uint64_t weights = model.shared_bytes;
  for (int64_t l = layers.begin; l < layers.end; ++l) weights += model.layer_bytes[static_cast<size_t>(l)];
  const uint64_t data = weights + model.kv_bytes_per_layer * static_cast<uint64_t>(layers.size());
  return data + options.headroom_bytes + static_cast<uint64_t>(static_cast<double>(data) * options.headroom_fraction);
}

std::string format_plan_table(const std::vector<PlannedStage>& plan, const std::string& coordinator_address) {
  std::string out = "| id | address | memory | layers | port | role |\n|---|---|---|---|---|---|\n";
  const auto colon = coordinator_address.rfind(':');
  out += fmt::format("| coordinator | {} | - | embeddings, output head | {} | coordinator |\n",
                     coordinator_address.substr(0, colon),
                     colon == std::string::npos ? "" : coordinator_address.substr(colon + 1));
  for (const auto& p : plan)
    out += fmt::format("| {} | {} | {} of {} free | {} | {} | worker |\n", p.record.node_id, p.record.host,
                       format_bytes(p.bytes_needed), format_bytes(p.record.memory_free), to_string(p.stage.layers),
                       p.record.port);
  return out;
}

}  // namespace baton
