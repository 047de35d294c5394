// kernel-bench: one row per op × type × shape × ISA × threads, with time, GB/s or GFLOP/s and
// the percentage of this machine's measured peak (read bandwidth or f32 FMA throughput,
// measured first). Usage: kernel-bench [--types q4_0,q8_0] [--isa avx2,avxvnni,avx512]
// [--threads 1,2] [--reps 15] [--sections membw,pool,ops,matvec,batch,attention,onednn]
// [--batch 128] [--token-tiles 32,128].
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <random>
#include <sstream>
#include <thread>

#include "bench/kernel-bench/bench_util.h"
#include "engine/base/error.h"

namespace baton::bench {

std::vector<float> random_floats(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

void print_header() {
  fmt::print("{:<10} {:<7} {:<32} {:<7} {:>3} {:>12} {:>9} {:>9} {:>7}  {}\n", "op", "type", "shape", "isa", "thr",
             "time_us", "GB/s", "GFLOP/s", "%peak", "note");
}

void print_row(const Row& r) {
  auto num = [](double v, int prec) { return std::isnan(v) ? std::string("-") : fmt::format("{:.{}f}", v, prec); };
  fmt::print("{:<10} {:<7} {:<32} {:<7} {:>3} {:>12} {:>9} {:>9} {:>7}  {}\n", r.op, r.type, r.shape, r.isa, r.threads,
             num(r.seconds * 1e6, 2), num(r.gbs, 2), num(r.gflops, 2), num(r.pct, 1), r.note);
  std::fflush(stdout);
}

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

BenchOptions parse(int argc, char** argv) {
  CLI::App app{"Baton kernel benchmark: time, bandwidth and FLOP rate of every kernel against measured peaks"};
  std::string types, isas, threads, sections = "membw,pool,ops,matvec,batch,attention,onednn";
  BenchOptions opt;
  app.add_option("--types", types, "comma-separated ggml types (default: every type with kernels)");
  app.add_option("--isa", isas, "comma-separated ISAs among scalar,avx2,avxvnni,avx512 (default: all this CPU runs)");
  app.add_option("--threads", threads, "comma-separated thread counts (default: 1 and the core count)");
  app.add_option("--reps", opt.reps, "repetitions per case; the median is reported");
  app.add_option("--budget", opt.budget_s, "seconds after which a case stops repeating (min 3 runs)");
  app.add_option("--batch", opt.batch, "n_tok of the batched matmul cases");
  app.add_option("--sections", sections, "which sections to run");
  std::string tiles;
  app.add_option("--token-tiles", tiles,
                 "comma-separated matmul token tiles for the batch section (default: the driver's)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  for (const auto& t : split(types)) {
    auto type = parse_ggml_type(t);
    if (!type) fail("--types: unknown ggml type '{}'", t);
    opt.types.push_back(*type);
  }
  for (const auto& i : split(isas)) {
    auto isa = kernels::parse_isa(i);
    if (!isa) fail("--isa: '{}' is not one of scalar, avx2, avxvnni, avx512", i);
    if (!kernels::isa_supported(*isa)) fail("--isa: this CPU does not support {}", i);
    opt.isas.push_back(*isa);
  }
  if (opt.isas.empty())
    for (auto isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2, kernels::Isa::kAvxVnni, kernels::Isa::kAvx512})
      if (kernels::isa_supported(isa)) opt.isas.push_back(isa);
  for (const auto& t : split(threads)) {
    const int n = std::stoi(t);
    if (n < 1) fail("--threads: {} is not a positive thread count", t);
    opt.threads.push_back(n);
  }
  if (opt.threads.empty()) {
    opt.threads.push_back(1);
    const int hw = static_cast<int>(std::thread::hardware_concurrency());
    if (hw > 1) opt.threads.push_back(hw);
  }
  for (const auto& s : split(sections)) opt.sections.insert(s);
  for (const auto& t : split(tiles)) {
    const int64_t n = std::stoll(t);
    if (n < 1) fail("--token-tiles: {} is not a positive tile", t);
    opt.token_tiles.push_back(n);
  }
  if (opt.reps < 1) fail("--reps must be at least 1");
  return opt;
}

}  // namespace
}  // namespace baton::bench

int main(int argc, char** argv) {
  using namespace baton::bench;
  try {
    const BenchOptions opt = parse(argc, argv);
    Peaks peaks;
    fmt::print("# kernel-bench: detected ISA {}, {} hardware threads; medians of up to {} runs\n",
               baton::kernels::isa_name(baton::kernels::detected_isa()), std::thread::hardware_concurrency(), opt.reps);
    if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
      char load[128] = {0};
      if (std::fgets(load, sizeof load, f)) fmt::print("# load average at start: {}", load);
      std::fclose(f);
    }
    print_header();
    if (opt.wants("membw") || opt.wants("matvec") || opt.wants("batch") || opt.wants("attention"))
      run_membw(opt, peaks);
    if (opt.wants("pool")) run_pool(opt);
    if (opt.wants("ops")) run_ops(opt, peaks);
    if (opt.wants("matvec")) run_matvec(opt, peaks);
    if (opt.wants("batch")) run_batch(opt, peaks);
    if (opt.wants("attention")) run_attention(opt, peaks);
    if (opt.wants("onednn")) run_onednn(opt, peaks);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
