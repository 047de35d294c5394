#include "engine/registry/planner.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/base/error.h"
#include "engine/model/model_config.h"
#include "engine/model/stage.h"
#include "gguf/model_identity.h"
#include "gguf/shard.h"

namespace baton::registry {

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
  for (const auto& t : file.tensors()) {
    const int64_t il = gguf::tensor_layer(t.name);
    if (il >= 0 && il < config.n_layer) {
      m.layer_bytes[static_cast<size_t>(il)] += t.n_bytes;
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

uint64_t range_bytes(const ModelFootprint& model, const PlannerOptions& options, int64_t first, int64_t last) {
  uint64_t weights = model.shared_bytes;
  for (int64_t l = first; l < last; ++l) weights += model.layer_bytes[static_cast<size_t>(l)];
  const uint64_t data = weights + model.kv_bytes_per_layer * static_cast<uint64_t>(last - first);
  return data + options.headroom_bytes + static_cast<uint64_t>(static_cast<double>(data) * options.headroom_fraction);
}

namespace {

constexpr double kSpeedClampFactor = 4.0;

struct Candidate {
  const NodeRecord* record;
  int64_t serve_first, serve_last;  // [first, last)
  double weight;
};

}  // namespace

std::vector<PlannedNode> plan_nodes(const std::vector<NodeRecord>& nodes, const ModelFootprint& model,
                                    const PlannerOptions& options) {
  const int64_t L = model.n_layer;
  if (L <= 0) fail("plan: the model has no layers");
  std::vector<Candidate> cands;
  std::vector<std::string> skipped;
  const bool all_speed = std::all_of(nodes.begin(), nodes.end(), [](const NodeRecord& r) { return r.speed > 0; });
  for (const auto& r : nodes) {
    if (r.model_identity != model.model_identity) {
      skipped.push_back(fmt::format("{} has model identity {}, the coordinator's is {}", r.node_id, r.model_identity,
                                    model.model_identity));
      continue;
    }
    if (r.layers.empty()) {
      skipped.push_back(fmt::format("{} serves no layers", r.node_id));
      continue;
    }
    const int64_t f = r.layers[0].first, l = std::min<int64_t>(r.layers[0].last + 1, L);
    if (f >= l) {
      skipped.push_back(fmt::format("{} serves layers {}-{}, outside the model's 0-{}", r.node_id, r.layers[0].first,
                                    r.layers[0].last, L - 1));
      continue;
    }
    const double w = all_speed ? static_cast<double>(r.speed) : std::max(1.0, static_cast<double>(r.memory_free) / 1e9);
    cands.push_back({&r, f, l, w});
  }
  if (cands.empty())
    fail("plan: no node can serve model {} ({} registered{}{})", model.model_identity, nodes.size(),
         skipped.empty() ? "" : ": ", fmt::join(skipped, "; "));
  if (all_speed) {
    // Speeds beyond 4x of the median either way are measurement outliers (a worker calibrated
    // while its machine was busy announced 0.2 GFLOP/s beside twins at 18: issue 29), not a
    // reason to leave a node without layers or to pile layers on one: clamped.
    std::vector<double> speeds;
    for (const auto& c : cands) speeds.push_back(c.weight);
    std::nth_element(speeds.begin(), speeds.begin() + static_cast<std::ptrdiff_t>(speeds.size() / 2), speeds.end());
    const double median = speeds[speeds.size() / 2];
    for (auto& c : cands) c.weight = std::clamp(c.weight, median / kSpeedClampFactor, median * kSpeedClampFactor);
  }
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    return a.serve_first != b.serve_first ? a.serve_first < b.serve_first : a.record->node_id < b.record->node_id;
  });

  // best[i][b]: least cost covering layers [0, b) with candidates < i; from[i][b]: where the
  // range of candidate i-1 began (-1: skipped it).
  const size_t n = cands.size();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(n + 1, std::vector<double>(static_cast<size_t>(L + 1), inf));
  std::vector<std::vector<int64_t>> from(n + 1, std::vector<int64_t>(static_cast<size_t>(L + 1), -2));
  best[0][0] = 0;
  for (size_t i = 0; i < n; ++i) {
    const Candidate& c = cands[i];
    for (int64_t b = 0; b <= L; ++b) {
      const double base = best[i][static_cast<size_t>(b)];
      if (base == inf) continue;
      if (base < best[i + 1][static_cast<size_t>(b)]) {
        best[i + 1][static_cast<size_t>(b)] = base;
        from[i + 1][static_cast<size_t>(b)] = -1;
      }
      if (b < c.serve_first || b >= c.serve_last) continue;
      for (int64_t e = b + 1; e <= c.serve_last; ++e) {
        if (range_bytes(model, options, b, e) > c.record->memory_free) break;
        const double k = static_cast<double>(e - b);
        const double cost = base + k * k / c.weight;
        if (cost < best[i + 1][static_cast<size_t>(e)]) {
          best[i + 1][static_cast<size_t>(e)] = cost;
          from[i + 1][static_cast<size_t>(e)] = b;
        }
      }
    }
  }
  if (best[n][static_cast<size_t>(L)] == inf) {
    uint64_t free_total = 0;
    for (const auto& c : cands) free_total += c.record->memory_free;
    uint64_t weights = 0;
    for (auto b : model.layer_bytes) weights += b;
    const uint64_t kv = model.kv_bytes_per_layer * static_cast<uint64_t>(L);
    // At least one node needs shared tensors and headroom; assume every eligible node is used.
    uint64_t need = weights + kv + static_cast<uint64_t>(static_cast<double>(weights + kv) * options.headroom_fraction) +
                    cands.size() * (options.headroom_bytes + model.shared_bytes);
    std::string why;
    if (need > free_total)
      why = fmt::format("{} missing", format_bytes(need - free_total));
    else
      why = "enough in total, but no contiguous assignment fits each node's memory and servable layers";
    fail("plan: cannot place {} layers (weights {} + KV cache {} for n_ctx {} x {} slots + headroom) on {} eligible "
         "node(s) with {} free in total: {}{}{}",
         L, format_bytes(weights), format_bytes(kv), model.n_ctx, model.max_sequences, cands.size(),
         format_bytes(free_total), why, skipped.empty() ? "" : "; skipped: ", fmt::join(skipped, "; "));
  }
  std::vector<PlannedNode> plan;
  int64_t e = L;
  for (size_t i = n; i > 0; --i) {
    const int64_t b = from[i][static_cast<size_t>(e)];
    if (b == -1) continue;
    plan.push_back({*cands[i - 1].record, b, e, range_bytes(model, options, b, e)});
    e = b;
  }
  std::reverse(plan.begin(), plan.end());
  return plan;
}

std::vector<PlannedNode> plan_around(const std::vector<PinnedRange>& pinned, const std::vector<NodeRecord>& nodes,
                                     const ModelFootprint& model, const PlannerOptions& options) {
  if (pinned.empty()) return plan_nodes(nodes, model, options);
  std::vector<PinnedRange> fixed = pinned;
  std::sort(fixed.begin(), fixed.end(), [](const PinnedRange& a, const PinnedRange& b) { return a.first < b.first; });
  for (size_t i = 0; i < fixed.size(); ++i) {
    const auto& p = fixed[i];
    if (p.first < 0 || p.last > model.n_layer || p.first >= p.last)
      fail("plan: node {} is pinned to layers {}-{}, outside the model's 0-{}", p.record.node_id, p.first, p.last - 1,
           model.n_layer - 1);
    if (i > 0 && fixed[i - 1].last > p.first)
      fail("plan: nodes {} (layers {}-{}) and {} (layers {}-{}) are pinned to overlapping layers",
           fixed[i - 1].record.node_id, fixed[i - 1].first, fixed[i - 1].last - 1, p.record.node_id, p.first,
           p.last - 1);
  }
  std::vector<NodeRecord> free_nodes;
  for (const auto& r : nodes)
    if (std::none_of(fixed.begin(), fixed.end(), [&](const PinnedRange& p) { return p.record.node_id == r.node_id; }))
      free_nodes.push_back(r);

  std::vector<std::pair<int64_t, int64_t>> gaps;  // [first, last) not pinned, in layer order
  int64_t at = 0;
  for (const auto& p : fixed) {
    if (p.first > at) gaps.push_back({at, p.first});
    at = p.last;
  }
  if (at < model.n_layer) gaps.push_back({at, model.n_layer});
  int64_t gap_layers = 0;
  for (const auto& [g0, g1] : gaps) gap_layers += g1 - g0;

  std::vector<PlannedNode> plan;
  // Plans [g0, g1) as a model of its own (the footprint's slice, each node's servable range
  // clipped and shifted) over a share of the nodes left, in proportion to the gap's layers, so
  // that later gaps keep nodes; the nodes it uses are not offered to later gaps.
  auto plan_gap = [&](int64_t g0, int64_t g1) {
    ModelFootprint part = model;
    part.n_layer = g1 - g0;
    part.layer_bytes.assign(model.layer_bytes.begin() + g0, model.layer_bytes.begin() + g1);
    const bool last_gap = g1 - g0 == gap_layers;
    const size_t share = last_gap ? free_nodes.size()
                                  : std::max<size_t>(1, static_cast<size_t>(std::lround(
                                                            static_cast<double>(free_nodes.size()) *
                                                            static_cast<double>(g1 - g0) / static_cast<double>(gap_layers))));
    gap_layers -= g1 - g0;
    std::vector<NodeRecord> shifted;
    for (const auto& r : free_nodes) {
      if (r.layers.empty() || shifted.size() >= share) continue;
      const int64_t f = std::max<int64_t>(r.layers[0].first, g0), l = std::min<int64_t>(r.layers[0].last + 1, g1);
      if (f >= l) continue;
      NodeRecord s = r;
      s.layers = {{static_cast<uint32_t>(f - g0), static_cast<uint32_t>(l - 1 - g0)}};
      shifted.push_back(s);
    }
    std::vector<PlannedNode> got;
    try {
      got = plan_nodes(shifted, part, options);
    } catch (const Error& e) {
      fail("plan: layers {}-{} (around the pinned nodes): {}", g0, g1 - 1, e.what());
    }
    for (auto& p : got) {
      p.first += g0;
      p.last += g0;
      p.record = *std::find_if(free_nodes.begin(), free_nodes.end(),
                               [&](const NodeRecord& r) { return r.node_id == p.record.node_id; });
      p.bytes_needed = range_bytes(model, options, p.first, p.last);
      std::erase_if(free_nodes, [&](const NodeRecord& r) { return r.node_id == p.record.node_id; });
      plan.push_back(std::move(p));
    }
  };
  for (const auto& [g0, g1] : gaps) plan_gap(g0, g1);
  for (const auto& p : fixed) plan.push_back({p.record, p.first, p.last, range_bytes(model, options, p.first, p.last)});
  std::sort(plan.begin(), plan.end(), [](const PlannedNode& a, const PlannedNode& b) { return a.first < b.first; });
  return plan;
}

std::string format_plan_table(const std::vector<PlannedNode>& plan, const std::string& coordinator_address) {
  std::string out = "| id | address | memory | layers | port | role |\n|---|---|---|---|---|---|\n";
  const auto colon = coordinator_address.rfind(':');
  out += fmt::format("| coordinator | {} | - | embeddings, output head | {} | coordinator |\n",
                     coordinator_address.substr(0, colon),
                     colon == std::string::npos ? "" : coordinator_address.substr(colon + 1));
  for (const auto& p : plan)
    out += fmt::format("| {} | {} | {} of {} free | {}-{} | {} | worker |\n", p.record.node_id, p.record.host,
                       format_bytes(p.bytes_needed), format_bytes(p.record.memory_free), p.first, p.last - 1,
                       p.record.port);
  return out;
}

}  // namespace baton::registry
