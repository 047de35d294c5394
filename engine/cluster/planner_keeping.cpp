// The minimal re-plan after nodes are lost (plan_keeping) and the count of workers a new plan
// reloads: planner.h says how.
#include <algorithm>
#include <limits>
#include <optional>

#include "engine/base/error.h"
#include "engine/cluster/planner.h"

namespace baton {

namespace {

double keep_weight(const NodeRecord& r) {
  return r.speed > 0 ? static_cast<double>(r.speed) : std::max(1.0, static_cast<double>(r.memory_free) / 1e9);
}

// Plans `gap` over `spares` as a model of its own, or nullopt when they cannot hold it.
std::optional<std::vector<PlannedStage>> keep_fill_with_spares(const std::vector<NodeRecord>& spares, LayerSpan gap,
                                                               const ModelFootprint& model,
                                                               const PlannerOptions& options) {
  try {
    return plan_span(spares, gap, model, options);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// Whether `node` may grow from its stage to `layers`: it serves those layers and its announced
// memory holds the whole span (memory_free is what a node offers for its layers, as the planner
// reads it: plan_nodes checks range_bytes <= memory_free).
bool keep_can_grow(const PlannedStage& node, LayerSpan layers, const ModelFootprint& model,
                   const PlannerOptions& options) {
  if (!serves(node.record, layers)) return false;
  return range_bytes(model, options, layers) <= node.record.memory_free;
}

bool keep_in_layer_order(const PlannedStage& a, const PlannedStage& b) {
  return a.stage.layers.begin < b.stage.layers.begin;
}

}  // namespace

size_t count_reloaded(const std::vector<PlannedStage>& current, const std::vector<PlannedStage>& next) {
  size_t n = 0;
  for (const auto& p : next)
    for (const auto& c : current)
      if (p.record.node_id == c.record.node_id && p.stage.layers != c.stage.layers) ++n;
  return n;
}

std::vector<PlannedStage> plan_keeping(const std::vector<PlannedStage>& current,
                                       const std::vector<PlannedStage>& pinned, const std::vector<NodeRecord>& nodes,
                                       const ModelFootprint& model, const PlannerOptions& options) {
  auto fresh = [&] {
    std::vector<PlannedStage> pins = pinned;
    for (auto& p : pins)
      for (const auto& r : nodes)
        if (r.node_id == p.record.node_id) p = planned_stage(r, p.stage.layers, p.bytes_needed);
    return plan_around(pins, nodes, model, options);
  };
  auto is_pinned = [&](const std::string& id) {
    return std::any_of(pinned.begin(), pinned.end(), [&](const PlannedStage& p) { return p.record.node_id == id; });
  };
  std::vector<PlannedStage> plan;  // the stages that stay
  for (const auto& c : current) {
    const LayerSpan& layers = c.stage.layers;
    if (layers.begin < 0 || layers.end > model.n_layer || layers.empty()) return fresh();
    auto r =
        std::find_if(nodes.begin(), nodes.end(), [&](const NodeRecord& n) { return n.node_id == c.record.node_id; });
    if (is_pinned(c.record.node_id)) {  // pinned: stays whether it registered or not
      plan.push_back(r != nodes.end() ? planned_stage(*r, layers, c.bytes_needed) : c);
      continue;
    }
    if (r == nodes.end() || r->model_identity != model.model_identity || !serves(*r, layers)) continue;
    plan.push_back(planned_stage(*r, layers, range_bytes(model, options, layers)));
  }
  for (const auto& p : pinned)
    if (std::none_of(plan.begin(), plan.end(),
                     [&](const PlannedStage& k) { return k.record.node_id == p.record.node_id; }))
      return fresh();  // a pin the current plan lacks: not a plan this function can patch
  if (plan.empty()) return fresh();
  std::sort(plan.begin(), plan.end(), keep_in_layer_order);
  for (size_t i = 1; i < plan.size(); ++i)
    if (plan[i - 1].stage.layers.end > plan[i].stage.layers.begin) return fresh();

  std::vector<NodeRecord> spares;
  for (const auto& r : nodes)
    if (r.model_identity == model.model_identity &&
        std::none_of(plan.begin(), plan.end(), [&](const PlannedStage& k) { return k.record.node_id == r.node_id; }))
      spares.push_back(r);

  std::vector<LayerSpan> gaps;
  int64_t at = 0;
  for (const auto& k : plan) {
    if (k.stage.layers.begin > at) gaps.push_back({at, k.stage.layers.begin});
    at = k.stage.layers.end;
  }
  if (at < model.n_layer) gaps.push_back({at, model.n_layer});

  for (const auto& gap : gaps) {
    const int64_t g0 = gap.begin, g1 = gap.end;
    if (auto filled = keep_fill_with_spares(spares, gap, model, options)) {
      for (const auto& p : *filled)
        std::erase_if(spares, [&](const NodeRecord& r) { return r.node_id == p.record.node_id; });
      plan.insert(plan.end(), filled->begin(), filled->end());
      continue;
    }
    // The kept neighbours: the stage ending at g0 and the one beginning at g1 (not pinned).
    auto neighbour = [&](bool left) -> PlannedStage* {
      for (auto& k : plan)
        if ((left ? k.stage.layers.end == g0 : k.stage.layers.begin == g1) && !is_pinned(k.record.node_id)) return &k;
      return nullptr;
    };
    PlannedStage* l = neighbour(true);
    PlannedStage* r = neighbour(false);
    const double inf = std::numeric_limits<double>::infinity();
    double best = inf;
    int64_t split = -1;  // l takes [l's begin, split), r takes [split, r's end)
    auto consider = [&](int64_t s) {
      if ((s > g0 && !l) || (s < g1 && !r)) return;
      if (l && s > g0 && !keep_can_grow(*l, {l->stage.layers.begin, s}, model, options)) return;
      if (r && s < g1 && !keep_can_grow(*r, {s, r->stage.layers.end}, model, options)) return;
      double cost = 0;
      if (l)
        cost += static_cast<double>((s - l->stage.layers.begin) * (s - l->stage.layers.begin)) / keep_weight(l->record);
      if (r)
        cost += static_cast<double>((r->stage.layers.end - s) * (r->stage.layers.end - s)) / keep_weight(r->record);
      if (cost < best) best = cost, split = s;
    };
    consider(g1);  // the left neighbour alone
    consider(g0);  // the right neighbour alone
    if (split < 0)
      for (int64_t s = g0 + 1; s < g1; ++s) consider(s);  // both, only when neither can alone
    if (split < 0) return fresh();
    if (l && split > g0) {
      l->stage.layers.end = split;
      l->bytes_needed = range_bytes(model, options, l->stage.layers);
    }
    if (r && split < g1) {
      r->stage.layers.begin = split;
      r->bytes_needed = range_bytes(model, options, r->stage.layers);
    }
  }
  std::sort(plan.begin(), plan.end(), keep_in_layer_order);
  return plan;
}

}  // namespace baton
