// Planning over registered nodes: by memory and speed (plan_nodes) and around pinned ranges
// (plan_around). planner.h says how.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/base/error.h"
#include "engine/cluster/planner.h"

namespace baton {

namespace {

constexpr double kSpeedClampFactor = 4.0;

struct Candidate {
  const NodeRecord* record;
  LayerSpan servable;  // clipped to the model's layers
  double weight;
};

}  // namespace

std::vector<PlannedStage> plan_nodes(const std::vector<NodeRecord>& nodes, const ModelFootprint& model,
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
    const LayerSpan announced = served_layers(r);
    const LayerSpan servable{announced.begin, std::min<int64_t>(announced.end, L)};
    if (servable.empty()) {
      skipped.push_back(
          fmt::format("{} serves layers {}, outside the model's 0-{}", r.node_id, to_string(announced), L - 1));
      continue;
    }
    const double w = all_speed ? static_cast<double>(r.speed) : std::max(1.0, static_cast<double>(r.memory_free) / 1e9);
    cands.push_back({&r, servable, w});
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
    return a.servable.begin != b.servable.begin ? a.servable.begin < b.servable.begin
                                                : a.record->node_id < b.record->node_id;
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
      if (!c.servable.contains(b)) continue;
      for (int64_t e = b + 1; e <= c.servable.end; ++e) {
        if (range_bytes(model, options, {b, e}) > c.record->memory_free) break;
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
    uint64_t need = weights + kv +
                    static_cast<uint64_t>(static_cast<double>(weights + kv) * options.headroom_fraction) +
                    cands.size() * (options.headroom_bytes + model.shared_bytes);
    std::string why;
    if (need > free_total) why = fmt::format("{} missing", format_bytes(need - free_total));
    else why = "enough in total, but no contiguous assignment fits each node's memory and servable layers";
    fail(
        "plan: cannot place {} layers (weights {} + KV cache {} for n_ctx {} x {} slots + headroom) on {} eligible "
        "node(s) with {} free in total: {}{}{}",
        L, format_bytes(weights), format_bytes(kv), model.n_ctx, model.max_sequences, cands.size(),
        format_bytes(free_total), why, skipped.empty() ? "" : "; skipped: ", fmt::join(skipped, "; "));
  }
  std::vector<PlannedStage> plan;
  int64_t e = L;
  for (size_t i = n; i > 0; --i) {
    const int64_t b = from[i][static_cast<size_t>(e)];
    if (b == -1) continue;
    plan.push_back(planned_stage(*cands[i - 1].record, {b, e}, range_bytes(model, options, {b, e})));
    e = b;
  }
  std::reverse(plan.begin(), plan.end());
  return plan;
}

std::vector<PlannedStage> plan_span(const std::vector<NodeRecord>& nodes, LayerSpan span, const ModelFootprint& model,
                                    const PlannerOptions& options, size_t max_nodes) {
  ModelFootprint part = model;
  part.n_layer = span.size();
  part.layer_bytes.assign(model.layer_bytes.begin() + span.begin, model.layer_bytes.begin() + span.end);
  std::vector<NodeRecord> shifted;
  for (const auto& r : nodes) {
    if (r.layers.empty() || shifted.size() >= max_nodes) continue;
    const LayerSpan can = served_layers(r);
    const LayerSpan clipped{std::max(can.begin, span.begin), std::min(can.end, span.end)};
    if (clipped.empty()) continue;
    NodeRecord s = r;
    set_served_layers(s, {clipped.begin - span.begin, clipped.end - span.begin});
    shifted.push_back(s);
  }
  std::vector<PlannedStage> got = plan_nodes(shifted, part, options);
  for (auto& p : got) {
    const LayerSpan layers{p.stage.layers.begin + span.begin, p.stage.layers.end + span.begin};
    const NodeRecord& record =
        *std::find_if(nodes.begin(), nodes.end(), [&](const NodeRecord& r) { return r.node_id == p.record.node_id; });
    p = planned_stage(record, layers, range_bytes(model, options, layers));
  }
  return got;
}

std::vector<PlannedStage> plan_around(const std::vector<PlannedStage>& pinned, const std::vector<NodeRecord>& nodes,
                                      const ModelFootprint& model, const PlannerOptions& options) {
  if (pinned.empty()) return plan_nodes(nodes, model, options);
  std::vector<PlannedStage> fixed = pinned;
  std::sort(fixed.begin(), fixed.end(),
            [](const PlannedStage& a, const PlannedStage& b) { return a.stage.layers.begin < b.stage.layers.begin; });
  for (size_t i = 0; i < fixed.size(); ++i) {
    const LayerSpan& layers = fixed[i].stage.layers;
    if (layers.begin < 0 || layers.end > model.n_layer || layers.empty())
      fail("plan: node {} is pinned to layers {}-{}, outside the model's 0-{}", fixed[i].record.node_id, layers.begin,
           layers.last(), model.n_layer - 1);
    if (i > 0 && fixed[i - 1].stage.layers.end > layers.begin)
      fail("plan: nodes {} (layers {}) and {} (layers {}) are pinned to overlapping layers",
           fixed[i - 1].record.node_id, to_string(fixed[i - 1].stage.layers), fixed[i].record.node_id,
           to_string(layers));
  }
  std::vector<NodeRecord> free_nodes;
  for (const auto& r : nodes)
    if (std::none_of(fixed.begin(), fixed.end(), [&](const PlannedStage& p) { return p.record.node_id == r.node_id; }))
      free_nodes.push_back(r);

  std::vector<LayerSpan> gaps;  // not pinned, in layer order
  int64_t at = 0;
  for (const auto& p : fixed) {
    if (p.stage.layers.begin > at) gaps.push_back({at, p.stage.layers.begin});
    at = p.stage.layers.end;
  }
  if (at < model.n_layer) gaps.push_back({at, model.n_layer});
  int64_t gap_layers = 0;
  for (const auto& gap : gaps) gap_layers += gap.size();

  std::vector<PlannedStage> plan;
  // Each gap is planned as a model of its own over a share of the nodes left, in proportion to
  // the gap's layers, so that later gaps keep nodes; the nodes it uses are not offered to later gaps.
  for (const auto& gap : gaps) {
    const bool last_gap = gap.size() == gap_layers;
    const size_t share =
        last_gap ? free_nodes.size()
                 : std::max<size_t>(1, static_cast<size_t>(std::lround(static_cast<double>(free_nodes.size()) *
                                                                       static_cast<double>(gap.size()) /
                                                                       static_cast<double>(gap_layers))));
    gap_layers -= gap.size();
    std::vector<PlannedStage> got;
    try {
      got = plan_span(free_nodes, gap, model, options, share);
    } catch (const Error& e) {
      fail("plan: layers {} (around the pinned nodes): {}", to_string(gap), e.what());
    }
    for (auto& p : got) {
      std::erase_if(free_nodes, [&](const NodeRecord& r) { return r.node_id == p.record.node_id; });
      plan.push_back(std::move(p));
    }
  }
  for (const auto& p : fixed)
    plan.push_back(planned_stage(p.record, p.stage.layers, range_bytes(model, options, p.stage.layers)));
  std::sort(plan.begin(), plan.end(),
            [](const PlannedStage& a, const PlannedStage& b) { return a.stage.layers.begin < b.stage.layers.begin; });
  return plan;
}

}  // namespace baton
