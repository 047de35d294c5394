// Which layers a stage of the pipeline serves. Inside the engine a layer range is always the
// half-open LayerSpan [begin, end); people write the inclusive [first, last] (YAML
// `layers: [0, 10]`, JSON, the wire's Prepare), so convert only at those edges, with
// from_inclusive() / last().
#pragma once

#include <cstdint>
#include <string>

namespace baton {

struct LayerSpan {
  int64_t begin = 0, end = 0;  // [begin, end)

  static LayerSpan from_inclusive(int64_t first, int64_t last) { return {first, last + 1}; }
  int64_t last() const { return end - 1; }  // the inclusive form's last layer
  int64_t size() const { return end - begin; }
  bool empty() const { return end <= begin; }
  bool contains(int64_t layer) const { return layer >= begin && layer < end; }
  bool operator==(const LayerSpan&) const = default;
};

// "0-10" (inclusive, as users write it); "none" for an empty span.
inline std::string to_string(const LayerSpan& span) {
  if (span.empty()) return "none";
  return std::to_string(span.begin) + "-" + std::to_string(span.last());
}

// One stage of a plan: the node, where to reach it, and its layers. The one plan type of the
// chain, the planners and the tools.
struct StageAssignment {
  std::string node_id;
  std::string host;
  uint16_t port = 0;
  LayerSpan layers;

  std::string address() const { return host + ":" + std::to_string(port); }
  bool operator==(const StageAssignment&) const = default;
};

}  // namespace baton
