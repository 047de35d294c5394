// Internal to registry::DynamicCluster's .cpp files: how a planned node's registry entry
// compares with the plan.
#pragma once

#include <string>

#include <fmt/format.h>

#include "engine/registry/node_registry.h"
#include "engine/cluster/planner.h"

namespace baton::registry {

// Online, heard from, and serving `identity`: a node the planner may use.
inline bool usable_for_plan(const NodeEntry& e, const std::string& identity) {
  return e.heard && e.state == NodeState::kOnline && e.record.model_identity == identity;
}

// A planned node that registered again at another address (a worker restarted on a new port):
// the loaded pipeline's link is to the old process, so the node counts as lost until a re-plan
// loads it at the new address. "" when the addresses agree.
inline std::string moved_since_planned(const PlannedStage& p, const NodeEntry& e) {
  if (e.record.host == p.record.host && e.record.port == p.record.port) return {};
  return fmt::format("re-registered at {}:{}, the loaded pipeline uses {}:{}", e.record.host, e.record.port,
                     p.record.host, p.record.port);
}

}  // namespace baton::registry
