// The static path's planner: a YAML node list's explicit layers checked against the model, or
// `auto` layers split by weight (planner.h: plan_layers).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/base/error.h"
#include "engine/cluster/cluster_config.h"
#include "engine/cluster/planner.h"

namespace baton {

namespace {

// Every node gets [begin, end) in proportion to its weight; cumulative rounding keeps the split
// contiguous and exact, and each node gets >= 1 layer.
void split_by_weight(const ClusterConfig& config, int64_t n_layer, std::vector<StageAssignment>& plan) {
  const auto& nodes = config.nodes;
  if (static_cast<int64_t>(nodes.size()) > n_layer)
    fail("{}: {} nodes but the model has only {} layers; every node needs at least one", config.source, nodes.size(),
         n_layer);
  double total = 0;
  for (const auto& n : nodes) total += n.weight;
  double acc = 0;
  int64_t begin = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    acc += nodes[i].weight;
    int64_t end = i + 1 == nodes.size() ? n_layer : static_cast<int64_t>(std::llround(acc / total * n_layer));
    int64_t remaining_nodes = static_cast<int64_t>(nodes.size() - i - 1);
    end = std::clamp(end, begin + 1, n_layer - remaining_nodes);
    plan[i].layers = {begin, end};
    begin = end;
  }
}

}  // namespace

std::vector<StageAssignment> plan_layers(const ClusterConfig& config, int64_t n_layer) {
  const auto& nodes = config.nodes;
  if (nodes.empty()) fail("{}: no nodes to place the model's {} layers on", config.source, n_layer);
  size_t n_auto = static_cast<size_t>(std::count_if(nodes.begin(), nodes.end(), [](auto& n) { return !n.layers; }));
  std::vector<StageAssignment> plan;
  for (const auto& n : nodes) plan.push_back({n.id, n.host, n.port, {}});

  if (n_auto == nodes.size()) {
    split_by_weight(config, n_layer, plan);
    return plan;
  }
  if (n_auto != 0)
    fail("{}: some nodes have explicit layers and others `auto`; use one or the other for all nodes", config.source);

  std::vector<std::vector<std::string>> owners(static_cast<size_t>(n_layer));
  std::vector<std::string> beyond;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const LayerSpan layers = *nodes[i].layers;
    if (layers.end > n_layer)
      beyond.push_back(fmt::format("{} (line {}) has layers [{}, {}] but the model has layers 0..{}", nodes[i].id,
                                   nodes[i].line, layers.begin, layers.last(), n_layer - 1));
    for (int64_t l = layers.begin; l < std::min(layers.end, n_layer); ++l) owners[l].push_back(nodes[i].id);
    plan[i].layers = layers;
  }
  if (!beyond.empty()) fail("{}: {}", config.source, fmt::join(beyond, "; "));
  std::vector<std::string> problems;
  std::vector<int64_t> missing;
  for (int64_t l = 0; l < n_layer; ++l) {
    if (owners[l].empty()) missing.push_back(l);
    if (owners[l].size() > 1)
      problems.push_back(fmt::format("layer {} is assigned to {}", l, fmt::join(owners[l], " and ")));
  }
  // Each run of unassigned layers names the nodes around it (issue 29: "layers 2 are not
  // assigned" left the operator of 39 nodes to find them).
  auto range_of = [&](const std::string& id) {
    for (const auto& p : plan)
      if (p.node_id == id) return fmt::format("node {} (layers {}-{})", id, p.layers.begin, p.layers.last());
    return "node " + id;
  };
  std::vector<std::string> gaps;
  for (size_t k = 0; k < missing.size();) {
    size_t e = k;
    while (e + 1 < missing.size() && missing[e + 1] == missing[e] + 1) ++e;
    const LayerSpan gap{missing[k], missing[e] + 1};
    std::vector<std::string> around;
    if (gap.begin > 0 && !owners[static_cast<size_t>(gap.begin - 1)].empty())
      around.push_back("after " + range_of(owners[static_cast<size_t>(gap.begin - 1)].front()));
    if (gap.end < n_layer && !owners[static_cast<size_t>(gap.end)].empty())
      around.push_back("before " + range_of(owners[static_cast<size_t>(gap.end)].front()));
    gaps.push_back(fmt::format("{} {}{}", gap.size() == 1 ? "layer" : "layers",
                               gap.size() == 1 ? fmt::format("{}", gap.begin) : to_string(gap),
                               around.empty() ? "" : fmt::format(" ({})", fmt::join(around, ", "))));
    k = e + 1;
  }
  if (!missing.empty())
    problems.insert(problems.begin(), fmt::format("{} {} not assigned to any node", fmt::join(gaps, "; "),
                                                  missing.size() == 1 ? "is" : "are"));
  if (!problems.empty()) fail("{}: {}", config.source, fmt::join(problems, "; "));
  // The chain visits nodes in listed order: each range must start where the previous ended.
  for (size_t i = 1; i < plan.size(); ++i)
    if (plan[i].layers.begin != plan[i - 1].layers.end)
      fail("{}: node {} starts at layer {} but the previous node {} ends at layer {}: list nodes in layer order",
           config.source, plan[i].node_id, plan[i].layers.begin, plan[i - 1].node_id, plan[i - 1].layers.last());
  return plan;
}

}  // namespace baton
