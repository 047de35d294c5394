// What the HTTP API shows about the machines behind the model: GET /health and GET /v1/cluster.
// The local single-process mode, a static cluster and the dynamic registry each provide one.
// Thread-safety: called from HTTP threads at any time; implementations synchronise.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace baton::api {

struct NodeView {
  std::string id;
  std::string address;                 // host:port
  int64_t first_layer = -1;            // inclusive; -1 when it serves none yet
  int64_t last_layer = -1;             // inclusive
  std::string status;                  // "online", "loading" or "offline"
  std::string reason;                  // its last status change in words ("" when not tracked)
  std::string role;                    // "coordinator", "worker"
  double load = 0;                     // share of the last minute spent computing, 0..1 (best effort)
  double last_heartbeat_seconds = -1;  // seconds since the last sign of life; -1 = never / not tracked
  uint64_t memory_total_bytes = 0;
  uint64_t memory_used_bytes = 0;   // weights + KV cache it reported
  double compute_ms_per_token = 0;  // cumulative stage compute / tokens (0 when unknown)
  // The machine's readings by name (engine/cluster/node_readings.h: cpu_temperature_celsius,
  // network_receive_bytes, ...) from its last heartbeat or Stats reply; absent = unknown.
  std::map<std::string, double> readings{};
};

struct ClusterViewSnapshot {
  bool ready = false;           // requests can be served now
  bool layers_covered = false;  // every layer 0..n_layer-1 is on an online node
  int64_t n_layer = 0;
  std::vector<NodeView> nodes;  // in pipeline order
  std::string detail;           // why not ready, when it is not
};

class ClusterView {
 public:
  virtual ~ClusterView() = default;
  virtual ClusterViewSnapshot snapshot() const = 0;
};

}  // namespace baton::api
