// A range of transformer layers. Inside the engine a layer range is always the half-open
// LayerSpan [begin, end); people write the inclusive [first, last] (YAML `layers: [0, 10]`,
// JSON, the wire's Prepare, engine-run --split's cut points), so convert only at those edges,
// with from_inclusive() / last(). On the ground floor: a local model's stages use it as well as
// a cluster's plan.
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

}  // namespace baton
