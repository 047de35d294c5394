// Field-by-field sanity of a node record, wherever it comes from (a Register or Heartbeat on
// the control port, an etcd value, the registry file): a record that passes the wire's type
// checks can still claim layers the model does not have, 2^63 bytes of memory or 3e38
// GFLOP/s, and such a record must be neither listed nor persisted nor planned on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/registry/registry_backend.h"

namespace baton::registry {

inline constexpr uint64_t kMaxNodeMemoryBytes = uint64_t{1} << 50;  // 1 PiB
inline constexpr uint32_t kMaxNodeThreads = 1 << 16;
inline constexpr double kMaxNodeLoad = 1e6;
inline constexpr double kMaxNodeSpeed = 1e7;  // GFLOP/s
inline constexpr size_t kMaxNodeLayerRanges = 64;
inline constexpr uint32_t kMaxLayerIndex = 1 << 20;  // when the model is not known

// Throws baton::Error "<context>: node record '<id>': <field> ..." naming the first bad field.
// n_layer: the served model's layer count (layer ranges must end below it), or 0 if unknown.
void check_node_record(const NodeRecord& record, int64_t n_layer, std::string_view context);

}  // namespace baton::registry
