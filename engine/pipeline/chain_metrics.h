// What a pipeline::Chain measures and reports: each worker's own counters (Stats replies) and
// the coordinator's measurements of the passes it completed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace baton::pipeline {

// One worker's counters (Stats reply), cumulative since it started.
struct StageStats {
  std::string node_id;
  std::map<std::string, double> values;  // compute_ms, forwards, tokens, bytes_in, bytes_out
};

// Measured on the coordinator from the passes it completed (cumulative since the load), with
// each stage's own figures from the Hidden timing trailer (engine/pipeline/wire.h). Every
// duration is a difference of two readings of one machine's clock.
struct StageMetrics {
  std::string node_id;
  double compute_ms = 0;    // its layers
  double residence_ms = 0;  // frame received -> result handed to the connection (queue + compute + encode)
  double bytes_out = 0;     // activation bytes it sent (to the next stage, or Hidden to the coordinator)
};
// One hop (coordinator -> first stage, stage i -> stage i+1, last stage -> coordinator): the
// time from the sender's hand-over to the receiver's I/O thread having the whole frame, summed
// over the passes where the receiver had a clock estimate for that link (docs/PROTOCOL.md,
// "Per-hop network time"). |network_ms - true| <= error_ms.
struct HopMetrics {
  std::string from, to;     // node ids, or "coordinator"
  double network_ms = 0;    // sum of the per-pass estimates, each clamped to [0, that pass's all hops]
  double error_ms = 0;      // sum of their error bounds
  double bytes = 0;         // activation bytes over this hop (all passes)
  uint64_t passes = 0;      // passes measured
  uint64_t tokens = 0;      // their tokens
  uint64_t unmeasured = 0;  // passes without a clock estimate for this link
};
struct ClusterMetrics {
  uint64_t passes = 0;               // completed forward passes
  uint64_t tokens = 0;               // their tokens
  uint64_t failed_passes = 0;        // lost to an error
  double round_trip_ms = 0;          // coordinator: Forward handed to the connection -> Hidden received
  double network_ms = 0;             // round trip - sum of stage residences: all hops, wire + (de)serialisation
  double bytes_to_first = 0;         // activation bytes coordinator -> first stage
  std::vector<StageMetrics> stages;  // plan order
  std::vector<HopMetrics> hops;      // stages.size() + 1, chain order
  std::string activations;           // "f32", "f16" or "bf16"
  int max_in_flight = 1;
  int peak_in_flight = 0;  // most passes that were in the chain at once
};

}  // namespace baton::pipeline
