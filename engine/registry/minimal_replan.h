// The re-plan after nodes are lost, moving as few layers as possible (issue 29: losing 2 of 35
// nodes reloaded 19 of the 33 that remained, gigabytes from disk each at 70B).
//
// Every range of the current plan whose node is still usable (and still serves those layers) stays
// exactly as it is, so its worker re-adopts its load. Only the layers left uncovered — the lost
// nodes' ranges — are placed, gap by gap in layer order:
//   1. on nodes that hold no range (spares, new joiners), planned over the gap like plan_nodes();
//   2. else on one kept neighbour of the gap (the range that ends where the gap begins, or the one
//      that begins where it ends), the one with the lower sum(n^2/speed) cost whose memory and
//      servable layers allow it; both neighbours share the gap only when neither can take it alone.
// Pinned ranges (mixed topology) stay and never grow. When a gap can be filled neither way, the
// result is a fresh plan_around() over every node (the old behaviour). Pure function.
#pragma once

#include <vector>

#include "engine/registry/planner.h"

namespace baton::registry {

std::vector<PlannedNode> plan_keeping(const std::vector<PlannedNode>& current, const std::vector<PinnedRange>& pinned,
                                      const std::vector<NodeRecord>& nodes, const ModelFootprint& model,
                                      const PlannerOptions& options = {});

// How many nodes of `next` already had a range in `current` but a different one (each of those
// workers reloads its layers); nodes new to the plan are not counted.
size_t count_reloaded(const std::vector<PlannedNode>& current, const std::vector<PlannedNode>& next);

}  // namespace baton::registry
