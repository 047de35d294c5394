#include "engine/registry/node_record_check.h"

#include <fmt/format.h>

#include <cmath>

#include "engine/base/error.h"
#include "engine/cluster/config_limits.h"

namespace baton::registry {

void check_node_record(const NodeRecord& r, int64_t n_layer, std::string_view context) {
  const std::string who = fmt::format("{}: node record '{}'", context, printable(r.node_id));
  auto refuse = [&](const std::string& problem) { fail("{}: {}", who, problem); };
  auto name = [&](std::string_view field, std::string_view text, size_t max_bytes, bool allow_empty, bool allow_space) {
    if (text.empty() && allow_empty) return;
    if (auto problem = name_problem(field, text, max_bytes, allow_space); !problem.empty()) refuse(problem);
  };
  name("node_id", r.node_id, kMaxNodeIdBytes, false, false);
  name("host", r.host, kMaxHostBytes, false, false);
  name("isa", r.isa, 64, true, false);
  name("model_identity", r.model_identity, 4096, true, true);
  if (r.port == 0) refuse("port must be 1-65535, found 0");
  if (r.memory_total > kMaxNodeMemoryBytes)
    refuse(
        fmt::format("memory_total {} bytes is more than the {} a node may have", r.memory_total, kMaxNodeMemoryBytes));
  if (r.memory_free > r.memory_total)
    refuse(fmt::format("memory_free {} bytes is more than its memory_total {}", r.memory_free, r.memory_total));
  if (r.threads > kMaxNodeThreads) refuse(fmt::format("threads {} is more than {}", r.threads, kMaxNodeThreads));
  if (!std::isfinite(r.load) || r.load < 0 || r.load > kMaxNodeLoad)
    refuse(fmt::format("load must be finite, from 0 to {}, found {}", kMaxNodeLoad, r.load));
  if (!std::isfinite(r.speed) || r.speed < 0 || r.speed > kMaxNodeSpeed)
    refuse(fmt::format("speed must be finite, from 0 to {} GFLOP/s, found {}", kMaxNodeSpeed, r.speed));
  if (r.layers.size() > kMaxNodeLayerRanges)
    refuse(fmt::format("{} layer ranges, at most {}", r.layers.size(), kMaxNodeLayerRanges));
  const int64_t limit = n_layer > 0 ? n_layer : int64_t{kMaxLayerIndex};
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const auto& range = r.layers[i];
    if (range.first > range.last)
      refuse(fmt::format("layers[{}] [{}, {}] has first > last", i, range.first, range.last));
    if (range.last >= limit)
      refuse(n_layer > 0
                 ? fmt::format("layers[{}] [{}, {}] goes beyond the model's layers 0..{}", i, range.first, range.last,
                               n_layer - 1)
                 : fmt::format("layers[{}] [{}, {}] is beyond layer {}", i, range.first, range.last, limit - 1));
  }
}

}  // namespace baton::registry
