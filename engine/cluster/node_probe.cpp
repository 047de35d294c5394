#include "engine/cluster/node_probe.h"

#include <algorithm>
#include <ctime>
#include <fstream>
#include <sstream>
#include <vector>

#include "engine/base/error.h"
#include "engine/base/fp16.h"
#include "gguf/model_identity.h"
#include "gguf/shard.h"
#include "kernels/core/isa.h"
#include "kernels/core/matmul.h"
#include "kernels/core/thread_pool.h"

namespace baton::registry {

MemoryInfo read_meminfo(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot read {}", path);
  MemoryInfo m;
  bool have_total = false, have_available = false;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string key;
    uint64_t kib = 0;
    if (!(s >> key >> kib)) continue;
    if (key == "MemTotal:") m.total = kib * 1024, have_total = true;
    if (key == "MemAvailable:") m.available = kib * 1024, have_available = true;
  }
  if (!have_total || !have_available) fail("{} has no MemTotal/MemAvailable line", path);
  return m;
}

double calibrate_gflops(int threads, std::chrono::milliseconds budget) {
  constexpr int64_t k = 512, n_rows = 512, n_tok = 16;
  std::vector<uint16_t> w(static_cast<size_t>(k * n_rows));
  for (size_t i = 0; i < w.size(); ++i) w[i] = fp32_to_fp16(static_cast<float>((i * 7919) % 97) / 97.0f - 0.5f);
  std::vector<float> act(static_cast<size_t>(n_tok * k), 0.25f), out(static_cast<size_t>(n_tok * n_rows));
  kernels::ThreadPool pool(threads);
  kernels::MatmulDriver driver(pool);
  const auto view = kernels::WeightView::dense(GgmlType::kF16, w.data(), n_rows, k, "calibration");
  driver.matmul(view, act.data(), n_tok, out.data());  // warm up (kernel lookup, scratch)
  // The median of several short trials: one trial on a machine busy for a moment (another
  // worker starting, the page cache filling) announced 0.2 GFLOP/s where its twins said 18
  // (issue 29), and the planner then left nodes unused. Each trial is timed in the process's CPU
  // time spread over its threads, not in wall time: time-slicing with other processes (39
  // workers joining on one machine announced 0.8-20.8) says nothing of the cores' speed. A
  // machine busy for good shows in the pass times the re-plans measure (pass_speed.h).
  using Clock = std::chrono::steady_clock;
  auto cpu_seconds = [] {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  };
  const int n_threads = std::max(1, pool.n_threads());
  constexpr int kTrials = 7;
  const auto trial_budget = std::max<Clock::duration>(budget / kTrials, std::chrono::milliseconds(1));
  std::vector<double> rates;
  for (int t = 0; t < kTrials; ++t) {
    const auto t0 = Clock::now();
    const double c0 = cpu_seconds();
    int64_t runs = 0;
    do {
      driver.matmul(view, act.data(), n_tok, out.data());
      ++runs;
    } while (Clock::now() - t0 < trial_budget);
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    const double cpu = (cpu_seconds() - c0) / n_threads;
    const double s = cpu > 0 ? std::min(cpu, wall) : wall;
    rates.push_back(2.0 * static_cast<double>(k * n_rows * n_tok * runs) / s / 1e9);
  }
  std::nth_element(rates.begin(), rates.begin() + kTrials / 2, rates.end());
  return rates[kTrials / 2];
}

double CpuLoad::sample() {
  std::lock_guard lock(mutex_);
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  const double cpu = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  const auto now = std::chrono::steady_clock::now();
  double load = 0;
  if (last_cpu_s_ >= 0) {
    const double wall = std::chrono::duration<double>(now - last_wall_).count();
    if (wall > 0) load = (cpu - last_cpu_s_) / wall / threads_;
  }
  last_cpu_s_ = cpu;
  last_wall_ = now;
  return load < 0 ? 0 : (load > 1 ? 1 : load);
}

NodeRecord probe_node(const ProbeInput& input, const gguf::GgufFile& file) {
  NodeRecord r;
  r.node_id = input.node_id;
  r.host = input.host;
  r.port = input.port;
  const MemoryInfo m = read_meminfo();
  r.memory_total = m.total;
  r.memory_free = m.available;
  r.threads = static_cast<uint32_t>(input.threads > 0 ? input.threads : 1);
  r.isa = std::string(kernels::isa_name(kernels::active_isa()));
  r.load = 0;
  const gguf::HeldLayers held = gguf::held_layers(file);
  if (held.n_layer > 0) r.layers.push_back({held.first, held.last});
  r.model_identity = gguf::model_identity(file);
  r.speed = static_cast<float>(input.speed);
  return r;
}

}  // namespace baton::registry
