// What a worker says about itself when it joins a registry: memory from /proc/meminfo, the
// process's recent CPU load, the ISA, the model identity and servable layers of its GGUF
// file, and a measured compute speed (a short F16 calibration matmul at start).
// Pure measurement: no networking. Linux only (/proc).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "gguf/gguf_file.h"
#include "net/messages.h"

namespace baton::registry {

// A node's record is the wire's NodeStatus (the same alias as registry_backend.h, which sits a floor above).
using NodeRecord = net::NodeStatus;

struct MemoryInfo {
  uint64_t total = 0;      // MemTotal
  uint64_t available = 0;  // MemAvailable (what can still be allocated without swapping)
};

// Reads /proc/meminfo; throws baton::Error naming the file when it cannot be read or lacks a field.
MemoryInfo read_meminfo(const std::string& path = "/proc/meminfo");

// GFLOP/s of a [n_tok x k] x [k x n_rows] F16 matmul on `threads` threads: the median of 7 trials
// sharing about `budget` (each at least one matmul). Used only to rank nodes against each other.
double calibrate_gflops(int threads, std::chrono::milliseconds budget = std::chrono::milliseconds(140));

// Share of the wall time this process spent on the CPU since the previous call, divided by
// `threads` (0..1, best effort; 0 on the first call). Thread-safe.
class CpuLoad {
 public:
  explicit CpuLoad(int threads) : threads_(threads > 0 ? threads : 1) {}
  double sample();

 private:
  std::mutex mutex_;
  int threads_;
  double last_cpu_s_ = -1;
  std::chrono::steady_clock::time_point last_wall_;
};

struct ProbeInput {
  std::string node_id;
  std::string host;  // the address the coordinator and the previous stage use to reach it
  uint16_t port = 0;
  int threads = 1;
  double speed = 0;  // calibrate_gflops()
};

// A full record: identity and servable layers from `file` (a shard's range, or all layers),
// memory from /proc/meminfo, the ISA the kernels use.
NodeRecord probe_node(const ProbeInput& input, const gguf::GgufFile& file);

}  // namespace baton::registry
