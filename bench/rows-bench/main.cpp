// rows-bench: the quantized gemm (K-quants; Q4_0 and Q8_0 on the gate/up shape) with n_tok single rows (each token the
// only row of its sequence, RowOrder::kSingle: the decode rows of a continuous batch) on one thread, per TinyLlama-1.1B
// Q4_K_M weight shape. Prints the minimum thread CPU time of one call per n_tok and its cost per
// token relative to n_tok = 1 (CPU time: less sensitive to a shared machine than wall time).
// Each call reads its weight from DRAM (copies totalling >= 64 MB are cycled), as in a real pass.
// --order grouped: the same for rows in llama.cpp's 4-row GEMM order (TypeOps::gemm_grouped, the
// prompt rows of Q4_K), on plain rows, on repacked rows through an unrepacked copy (what the
// driver did before gemm_grouped_repacked) and on the repacked rows directly.
//   rows-bench [--ntok 1,2,4,8,16] [--reps 7] [--isa avx512] [--order single|grouped] [--hot]
// --hot: one weight copy called repeatedly, so it stays in cache: the kernel's compute cost alone
// (how much of the DRAM time a kernel fails to hide).
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "engine/base/ggml_type.h"
#include "kernels/core/isa.h"
#include "kernels/kquant/kernels.h"
#include "kernels/kquant/qx_K_x16.h"
#include "kernels/core/type_ops.h"

namespace {

using baton::GgmlType;
namespace kernels = baton::kernels;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Shape {
  const char* name;
  GgmlType type;
  int64_t n_rows, k;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"K-quant gemm cost of n_tok single rows (one thread, CPU time)"};
  std::vector<int64_t> ntoks = {1, 2, 4, 8, 16};
  int reps = 7;
  std::string isa_name = "avx512";
  app.add_option("--ntok", ntoks, "token counts")->delimiter(',');
  app.add_option("--reps", reps, "calls per case (the minimum is shown)");
  app.add_option("--isa", isa_name, "scalar, avx2, avxvnni or avx512");
  std::string order = "single";
  app.add_option("--order", order, "single (decode rows) or grouped (Q4_K prompt rows)")
      ->check(CLI::IsMember({"single", "grouped"}));
  std::string only;
  app.add_option("--only", only, "run only the shapes whose name contains this text (e.g. Q8_0)");
  bool hot = false;
  app.add_flag("--hot", hot, "one weight copy, called repeatedly: it stays in cache (the compute cost alone)");
  CLI11_PARSE(app, argc, argv);
  const auto isa = kernels::parse_isa(isa_name);
  if (!isa) {
    fmt::print(stderr, "unknown ISA {}\n", isa_name);
    return 2;
  }
  const Shape shapes[] = {
      {"q/o 2048x2048", GgmlType::kQ4_K, 2048, 2048},           {"gate/up 5632x2048", GgmlType::kQ4_K, 5632, 2048},
      {"down 2048x5632 Q4_K", GgmlType::kQ4_K, 2048, 5632},     {"down 2048x5632 Q6_K", GgmlType::kQ6_K, 2048, 5632},
      {"output 32000x2048 Q6_K", GgmlType::kQ6_K, 32000, 2048}, {"gate/up 5632x2048 Q5_K", GgmlType::kQ5_K, 5632, 2048},
      {"gate/up 5632x2048 Q4_0", GgmlType::kQ4_0, 5632, 2048},  {"gate/up 5632x2048 Q8_0", GgmlType::kQ8_0, 5632, 2048},
  };
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t max_tok = *std::max_element(ntoks.begin(), ntoks.end());
  fmt::print("| shape | n_tok | ms per call | ms per token | per-token cost vs n_tok=1 |\n|---|--:|--:|--:|--:|\n");
  const bool grouped = order == "grouped";
  for (const Shape& s : shapes) {
    if (!only.empty() && std::string(s.name).find(only) == std::string::npos) continue;
    const kernels::TypeOps* w_ops = kernels::find_type_ops(s.type, *isa);
    if (grouped && !w_ops->gemm_grouped) continue;
    const kernels::TypeOps* a_ops = kernels::find_type_ops(w_ops->vec_dot_type, *isa);
    const auto& wi = baton::require_ggml_type(s.type);
    const auto& ai = baton::require_ggml_type(w_ops->vec_dot_type);
    const size_t w_row = static_cast<size_t>(s.k / wi.block_size) * wi.block_bytes;
    const size_t a_row = static_cast<size_t>(s.k / ai.block_size) * ai.block_bytes;
    std::vector<uint8_t> w(w_row * static_cast<size_t>(s.n_rows)), a(a_row * static_cast<size_t>(max_tok));
    std::vector<float> row(static_cast<size_t>(s.k));
    for (int64_t r = 0; r < s.n_rows; ++r) {
      if (r < 64)
        for (auto& x : row) x = normal(rng);  // quantizing every row is slow: repeat 64
      if (r < 64) w_ops->from_float(row.data(), w.data() + static_cast<size_t>(r) * w_row, s.k);
      else
        std::copy_n(w.data() + static_cast<size_t>(r % 64) * w_row, w_row, w.data() + static_cast<size_t>(r) * w_row);
    }
    for (int64_t t = 0; t < max_tok; ++t) {
      for (auto& x : row) x = normal(rng);
      a_ops->from_float(row.data(), a.data() + static_cast<size_t>(t) * a_row, s.k);
    }
    // Copies of the weight, cycled through, so that every call streams it from DRAM as in a
    // real pass (the model does not fit any cache): at least 64 MB in all. --hot: one copy, in cache.
    const size_t w_bytes = w.size();
    const size_t n_copies = hot ? 1 : std::max<size_t>(1, (size_t{64} << 20) / w_bytes + 1);
    std::vector<uint8_t> copies(w_bytes * n_copies);
    for (size_t c = 0; c < n_copies; ++c)
      std::copy(w.begin(), w.end(), copies.begin() + static_cast<std::ptrdiff_t>(c * w_bytes));
    std::vector<float> out(static_cast<size_t>(s.n_rows * max_tok));
    const kernels::GemmFn gemm = grouped ? w_ops->gemm_grouped : w_ops->gemm_single ? w_ops->gemm_single : w_ops->gemm;
    // Weights in their load-time 16-row layout where this ISA's table has one (what the engine
    // multiplies): Q4_K / Q5_K on AVX-512, Q4_0 and Q5_K on both.
    if (w_ops->has_repacked_layout() && (!grouped || w_ops->gemm_grouped_repacked)) {
      const size_t x16_bytes = (w_bytes * n_copies + (size_t{2} << 20)) & ~((size_t{2} << 20) - 1);
      // On 2 MiB pages, as the engine's WeightArena holds them.
      std::unique_ptr<uint8_t, decltype(&std::free)> x16_mem(
          static_cast<uint8_t*>(std::aligned_alloc(size_t{2} << 20, x16_bytes)), &std::free);
      ::madvise(x16_mem.get(), x16_bytes, MADV_HUGEPAGE);
      std::span<uint8_t> x16(x16_mem.get(), x16_bytes);
      std::vector<uint8_t> plain(w_bytes);
      for (size_t c = 0; c < n_copies; ++c)
        w_ops->repack(copies.data() + c * w_bytes, x16.data() + c * w_bytes, s.n_rows, s.k);
      auto via_unrepack = [&](int64_t k, const void* wx, size_t ws, int64_t nr, const void* act, size_t as,
                              int64_t n_tok, float* o, size_t os) {
        w_ops->unrepack(wx, plain.data(), nr, k);
        gemm(k, plain.data(), ws, nr, act, as, n_tok, o, os);
      };
      std::vector<std::pair<const char*, std::function<void(int64_t, const void*, size_t, int64_t, const void*, size_t,
                                                            int64_t, float*, size_t)>>>
          x16_kernels;
      if (grouped) {
        x16_kernels.emplace_back("x16 unrepacked + grouped", via_unrepack);
        x16_kernels.emplace_back("x16 grouped", w_ops->gemm_grouped_repacked);
      } else {
        x16_kernels.emplace_back("x16", w_ops->gemm_repacked);
      }
      for (const auto& [label, fn] : x16_kernels) {
        for (int64_t nt : ntoks) {
          std::vector<double> times;
          for (int i = 0; i < reps; ++i) {
            const double t0 = thread_cpu_seconds();
            fn(s.k, x16.data() + static_cast<size_t>(i) % n_copies * w_bytes, w_row, s.n_rows, a.data(), a_row, nt,
               out.data(), static_cast<size_t>(s.n_rows));
            times.push_back(thread_cpu_seconds() - t0);
          }
          std::sort(times.begin(), times.end());
          fmt::print("| {} {} | {} | {:.3f} | {:.3f} | |\n", s.name, label, nt, times[0] * 1e3,
                     times[0] * 1e3 / static_cast<double>(nt));
        }
      }
    }
    double base = 0;
    for (int64_t nt : ntoks) {
      std::vector<double> times;
      for (int i = 0; i < reps; ++i) {
        const double t0 = thread_cpu_seconds();
        const uint8_t* wc = copies.data() + static_cast<size_t>(i) % n_copies * w_bytes;
        gemm(s.k, wc, w_row, s.n_rows, a.data(), a_row, nt, out.data(), static_cast<size_t>(s.n_rows));
        times.push_back(thread_cpu_seconds() - t0);
      }
      std::sort(times.begin(), times.end());
      const double ms = times[0] * 1e3;  // the minimum: the least disturbed call on a shared machine
      if (nt == 1 || base == 0) base = ms / static_cast<double>(nt);
      fmt::print("| {} | {} | {:.3f} | {:.3f} | {:.2f} |\n", s.name, nt, ms, ms / static_cast<double>(nt),
                 ms / static_cast<double>(nt) / base);
    }
  }
  return 0;
}
