// kernel-bench plumbing: options, measured peaks, timing (median of repetitions) and the
// one-row-per-case table.
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "engine/base/ggml_type.h"
#include "kernels/core/isa.h"
#include "kernels/core/thread_pool.h"

namespace baton::bench {

struct BenchOptions {
  std::vector<GgmlType> types;       // empty: every type with kernels
  std::vector<kernels::Isa> isas;    // ISAs to run (all this CPU supports by default)
  std::vector<int> threads;          // thread counts
  std::set<std::string> sections;    // membw, pool, ops, matvec, batch, attention, onednn
  int reps = 15;                     // repetitions per case (median reported)
  double budget_s = 3.0;             // stop repeating a case after this long (>= 3 samples)
  int batch = 128;                   // n_tok of the batched cases
  std::vector<int64_t> token_tiles;  // MatmulTuning::token_tile values for the batched cases (empty: default)
  bool wants(const std::string& s) const { return sections.count(s) > 0; }
};

// This machine's measured speed limits, filled by the membw section.
struct Peaks {
  std::map<int, double> read_gbs;                    // by thread count: read-sum bandwidth
  std::map<std::pair<int, int>, double> fma_gflops;  // by (isa, threads): f32 FMA throughput
  // by (isa, threads): int8 u8 x s8 multiply-adds (2 ops each) through the instructions the
  // quantized kernels use: vpdpbusd (AVX-512 VNNI), else vpmaddubsw + vpmaddwd + vpaddd
  std::map<std::pair<int, int>, double> dot_gops;
  double llc_bytes = 32.0 * 1024 * 1024;
};

struct Row {
  std::string op, type, shape, isa;
  int threads = 1;
  double seconds = NAN;
  double gbs = NAN;  // bytes streamed / time
  double gflops = NAN;
  double pct = NAN;  // of the relevant measured peak
  std::string note;
};

void print_header();
void print_row(const Row& row);

// Median wall time of fn() over up to `reps` runs (at least 3, fewer than reps once `budget_s`
// is spent). fn receives the repetition index (to rotate over weight copies).
template <class Fn>
double median_seconds(int reps, double budget_s, Fn&& fn) {
  using clock = std::chrono::steady_clock;
  std::vector<double> samples;
  const auto start = clock::now();
  for (int r = 0; r < reps; ++r) {
    const auto t0 = clock::now();
    fn(r);
    const auto t1 = clock::now();
    samples.push_back(std::chrono::duration<double>(t1 - t0).count());
    if (r >= 2 && std::chrono::duration<double>(t1 - start).count() > budget_s) break;
  }
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  return n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
}

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f);

// Reads `bytes` at p (a multiple of 32) split across the pool's threads, summing words; the
// speed of light of any kernel that streams the same bytes once.
uint64_t read_sum_bytes(const void* p, size_t bytes, kernels::ThreadPool& pool);

// CPU time of the whole process (all its threads), in seconds.
inline double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Medians of interleaved runs: wall seconds, and process CPU seconds (all threads).
struct InterleavedMedians {
  double wall_a, wall_b, cpu_a, cpu_b;
};

// Median seconds of a(rep) and of b(rep), their repetitions interleaved (a, b, a, b ...) so that
// both see the same machine load. The CPU-time medians are robust to the process being
// descheduled on a shared machine (wall time is not); divided by the thread count they are the
// busy time per thread.
template <class FnA, class FnB>
InterleavedMedians interleaved_medians(int reps, double budget_s, FnA&& a, FnB&& b) {
  using clock = std::chrono::steady_clock;
  std::vector<double> sa, sb, ca, cb;
  const auto start = clock::now();
  for (int r = 0; r < reps; ++r) {
    const double c0 = process_cpu_seconds();
    auto t0 = clock::now();
    a(r);
    auto t1 = clock::now();
    const double c1 = process_cpu_seconds();
    b(r);
    auto t2 = clock::now();
    const double c2 = process_cpu_seconds();
    sa.push_back(std::chrono::duration<double>(t1 - t0).count());
    sb.push_back(std::chrono::duration<double>(t2 - t1).count());
    ca.push_back(c1 - c0);
    cb.push_back(c2 - c1);
    if (r >= 2 && std::chrono::duration<double>(t2 - start).count() > budget_s) break;
  }
  auto median = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  return {median(sa), median(sb), median(ca), median(cb)};
}

// Sections (each prints its rows).
void run_membw(const BenchOptions& opt, Peaks& peaks);
void run_pool(const BenchOptions& opt);
void run_ops(const BenchOptions& opt, const Peaks& peaks);
void run_matvec(const BenchOptions& opt, const Peaks& peaks);
void run_batch(const BenchOptions& opt, const Peaks& peaks);
void run_attention(const BenchOptions& opt, const Peaks& peaks);
void run_onednn(const BenchOptions& opt, const Peaks& peaks);

}  // namespace baton::bench
