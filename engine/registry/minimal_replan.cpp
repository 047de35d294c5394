#include "engine/registry/minimal_replan.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "engine/base/error.h"

namespace baton::registry {

namespace {

bool keep_serves(const NodeRecord& r, int64_t first, int64_t last) {
  return !r.layers.empty() && r.layers[0].first <= first && static_cast<int64_t>(r.layers[0].last) + 1 >= last;
}

double keep_weight(const NodeRecord& r) {
  return r.speed > 0 ? static_cast<double>(r.speed) : std::max(1.0, static_cast<double>(r.memory_free) / 1e9);
}

// Plans [g0, g1) over `spares` as a model of its own (servable ranges clipped and shifted), or
// nullopt when they cannot hold it.
std::optional<std::vector<PlannedNode>> keep_fill_with_spares(const std::vector<NodeRecord>& spares, int64_t g0,
                                                              int64_t g1, const ModelFootprint& model,
                                                              const PlannerOptions& options) {
  ModelFootprint part = model;
  part.n_layer = g1 - g0;
  part.layer_bytes.assign(model.layer_bytes.begin() + g0, model.layer_bytes.begin() + g1);
  std::vector<NodeRecord> shifted;
  for (const auto& r : spares) {
    if (r.layers.empty()) continue;
    const int64_t f = std::max<int64_t>(r.layers[0].first, g0), l = std::min<int64_t>(r.layers[0].last + 1, g1);
    if (f >= l) continue;
    NodeRecord s = r;
    s.layers = {{static_cast<uint32_t>(f - g0), static_cast<uint32_t>(l - 1 - g0)}};
    shifted.push_back(s);
  }
  if (shifted.empty()) return std::nullopt;
  std::vector<PlannedNode> got;
  try {
    got = plan_nodes(shifted, part, options);
  } catch (const Error&) {
    return std::nullopt;
  }
  for (auto& p : got) {
    p.first += g0;
    p.last += g0;
    p.record = *std::find_if(spares.begin(), spares.end(),
                             [&](const NodeRecord& r) { return r.node_id == p.record.node_id; });
    p.bytes_needed = range_bytes(model, options, p.first, p.last);
  }
  return got;
}

// Whether `node` may grow from its range to [first, last): it serves those layers and its
// announced memory holds the whole range (memory_free is what a node offers for its range, as the
// planner reads it: plan_nodes checks range_bytes <= memory_free).
bool keep_can_grow(const PlannedNode& node, int64_t first, int64_t last, const ModelFootprint& model,
                   const PlannerOptions& options) {
  if (!keep_serves(node.record, first, last)) return false;
  return range_bytes(model, options, first, last) <= node.record.memory_free;
}

}  // namespace

size_t count_reloaded(const std::vector<PlannedNode>& current, const std::vector<PlannedNode>& next) {
  size_t n = 0;
  for (const auto& p : next)
    for (const auto& c : current)
      if (p.record.node_id == c.record.node_id && (p.first != c.first || p.last != c.last)) ++n;
  return n;
}

std::vector<PlannedNode> plan_keeping(const std::vector<PlannedNode>& current, const std::vector<PinnedRange>& pinned,
                                      const std::vector<NodeRecord>& nodes, const ModelFootprint& model,
                                      const PlannerOptions& options) {
  auto fresh = [&] {
    std::vector<PinnedRange> pins = pinned;
    for (auto& p : pins)
      for (const auto& r : nodes)
        if (r.node_id == p.record.node_id) p.record = r;
    return plan_around(pins, nodes, model, options);
  };
  auto is_pinned = [&](const std::string& id) {
    return std::any_of(pinned.begin(), pinned.end(), [&](const PinnedRange& p) { return p.record.node_id == id; });
  };
  std::vector<PlannedNode> plan;  // the ranges that stay
  for (const auto& c : current) {
    if (c.first < 0 || c.last > model.n_layer || c.first >= c.last) return fresh();
    auto r = std::find_if(nodes.begin(), nodes.end(), [&](const NodeRecord& n) { return n.node_id == c.record.node_id; });
    if (is_pinned(c.record.node_id)) {  // pinned: stays whether it registered or not
      plan.push_back(c);
      if (r != nodes.end()) plan.back().record = *r;
      continue;
    }
    if (r == nodes.end() || r->model_identity != model.model_identity || !keep_serves(*r, c.first, c.last)) continue;
    plan.push_back(c);
    plan.back().record = *r;
    plan.back().bytes_needed = range_bytes(model, options, c.first, c.last);
  }
  for (const auto& p : pinned)
    if (std::none_of(plan.begin(), plan.end(), [&](const PlannedNode& k) { return k.record.node_id == p.record.node_id; }))
      return fresh();  // a pin the current plan lacks: not a plan this function can patch
  if (plan.empty()) return fresh();
  std::sort(plan.begin(), plan.end(), [](const PlannedNode& a, const PlannedNode& b) { return a.first < b.first; });
  for (size_t i = 1; i < plan.size(); ++i)
    if (plan[i - 1].last > plan[i].first) return fresh();

  std::vector<NodeRecord> spares;
  for (const auto& r : nodes)
    if (r.model_identity == model.model_identity &&
        std::none_of(plan.begin(), plan.end(), [&](const PlannedNode& k) { return k.record.node_id == r.node_id; }))
      spares.push_back(r);

  std::vector<std::pair<int64_t, int64_t>> gaps;
  int64_t at = 0;
  for (const auto& k : plan) {
    if (k.first > at) gaps.push_back({at, k.first});
    at = k.last;
  }
  if (at < model.n_layer) gaps.push_back({at, model.n_layer});

  for (const auto& gap : gaps) {
    const int64_t g0 = gap.first, g1 = gap.second;
    if (auto filled = keep_fill_with_spares(spares, g0, g1, model, options)) {
      for (const auto& p : *filled)
        std::erase_if(spares, [&](const NodeRecord& r) { return r.node_id == p.record.node_id; });
      plan.insert(plan.end(), filled->begin(), filled->end());
      continue;
    }
    // The kept neighbours: the range ending at g0 and the one beginning at g1 (not pinned).
    auto neighbour = [&](bool left) -> PlannedNode* {
      for (auto& k : plan)
        if ((left ? k.last == g0 : k.first == g1) && !is_pinned(k.record.node_id)) return &k;
      return nullptr;
    };
    PlannedNode* l = neighbour(true);
    PlannedNode* r = neighbour(false);
    const double inf = std::numeric_limits<double>::infinity();
    double best = inf;
    int64_t split = -1;  // l takes [l->first, split), r takes [split, r->last)
    auto consider = [&](int64_t s) {
      if ((s > g0 && !l) || (s < g1 && !r)) return;
      if (l && s > g0 && !keep_can_grow(*l, l->first, s, model, options)) return;
      if (r && s < g1 && !keep_can_grow(*r, s, r->last, model, options)) return;
      double cost = 0;
      if (l) cost += static_cast<double>((s - l->first) * (s - l->first)) / keep_weight(l->record);
      if (r) cost += static_cast<double>((r->last - s) * (r->last - s)) / keep_weight(r->record);
      if (cost < best) best = cost, split = s;
    };
    consider(g1);  // the left neighbour alone
    consider(g0);  // the right neighbour alone
    if (split < 0)
      for (int64_t s = g0 + 1; s < g1; ++s) consider(s);  // both, only when neither can alone
    if (split < 0) return fresh();
    if (l && split > g0) {
      l->last = split;
      l->bytes_needed = range_bytes(model, options, l->first, l->last);
    }
    if (r && split < g1) {
      r->first = split;
      r->bytes_needed = range_bytes(model, options, r->first, r->last);
    }
  }
  std::sort(plan.begin(), plan.end(), [](const PlannedNode& a, const PlannedNode& b) { return a.first < b.first; });
  return plan;
}

}  // namespace baton::registry
