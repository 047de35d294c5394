// Which layers a stage of the pipeline serves (LayerSpan: engine/base/layer_span.h).
#pragma once

#include <cstdint>
#include <string>

#include "engine/base/layer_span.h"

namespace baton {

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
