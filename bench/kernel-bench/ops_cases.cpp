// Row ops, the thread pool's round trip, and attention over F16 KV caches.
#include <chrono>
#include <cstring>
#include <fmt/format.h>

#include "bench/kernel-bench/bench_util.h"
#include "engine/base/aligned_buffer.h"
#include "engine/base/fp16.h"
#include "kernels/attention/attention.h"
#include "kernels/ops/ops.h"
#include "kernels/ops/ops_rope.h"
#include "kernels/core/thread_pool.h"

namespace baton::bench {

void run_pool(const BenchOptions& opt) {
  for (int nth : opt.threads) {
    kernels::ThreadPool pool(nth);
    const int rounds = 2000;
    // Median over batches of `rounds` empty runs, reported per run.
    const double sec = median_seconds(opt.reps, opt.budget_s, [&](int) {
      for (int i = 0; i < rounds; ++i) pool.run([](int, int) {});
    });
    print_row(Row{"pool-run", "-", "empty job", "-", nth, sec / rounds, NAN, NAN, NAN, "wake + join round trip"});

    // Runs 20 us of serial work apart, as in a decode step: an idle vCPU may have halted by the
    // time it is woken, which costs more than a back-to-back wake.
    const int spaced = 200;
    const double gap = 20e-6;
    const double sec_spaced = median_seconds(std::max(3, opt.reps / 3), opt.budget_s, [&](int) {
      for (int i = 0; i < spaced; ++i) {
        pool.run([](int, int) {});
        const auto t0 = std::chrono::steady_clock::now();
        while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < gap) {
        }
      }
    });
    print_row(Row{"pool-run", "-", "empty job, 20us apart", "-", nth, sec_spaced / spaced - gap, NAN, NAN, NAN,
                  "round trip after an idle gap"});
  }
}

void run_ops(const BenchOptions& opt, const Peaks& peaks) {
  const int64_t n_big = 32000, n_embd = 4096, n_ff = 11008;
  const auto x = random_floats(static_cast<size_t>(n_big), 1, 4.0f);
  const auto w = random_floats(static_cast<size_t>(n_big), 2);
  std::vector<float> y(static_cast<size_t>(n_big));
  std::vector<uint16_t> h(static_cast<size_t>(n_big));
  const int reps = std::max(opt.reps, 200);
  const double bw1 = peaks.read_gbs.count(1) ? peaks.read_gbs.at(1) : NAN;

  for (kernels::Isa isa : opt.isas) {
    const kernels::OpsTable& t = kernels::ops_table(isa);
    const std::string isa_s(kernels::isa_name(isa));
    auto report = [&](const char* op, int64_t n, double bytes, auto&& fn) {
      const double sec = median_seconds(reps, opt.budget_s, [&](int) { fn(); });
      print_row(Row{op, "f32", fmt::format("{}", n), isa_s, 1, sec, bytes / sec / 1e9, NAN,
                    100.0 * bytes / sec / 1e9 / bw1, "data in cache"});
    };
    report("rms_norm", n_embd, 12.0 * n_embd, [&] { t.rms_norm(x.data(), w.data(), y.data(), n_embd, 1e-5f); });
    report("softmax", n_big, 8.0 * n_big, [&] { t.softmax(x.data(), y.data(), n_big); });
    report("silu", n_ff, 8.0 * n_ff, [&] { t.silu(x.data(), y.data(), n_ff); });
    report("swiglu", n_ff, 12.0 * n_ff, [&] { t.swiglu(x.data(), w.data(), y.data(), n_ff); });
    report("gelu", n_ff, 8.0 * n_ff, [&] { t.gelu(x.data(), y.data(), n_ff); });
    report("add", n_embd, 12.0 * n_embd, [&] { t.add(x.data(), w.data(), y.data(), n_embd); });
    report("f32_to_f16", n_embd, 6.0 * n_embd, [&] { t.f32_to_f16(x.data(), h.data(), n_embd); });
    report("f16_to_f32", n_embd, 6.0 * n_embd, [&] { t.f16_to_f32(h.data(), y.data(), n_embd); });

    // rope of one token's q (32 heads × 128), angles included
    kernels::RopeConfig cfg;
    cfg.n_rot = 128;
    for (auto layout : {kernels::RopeLayout::kNormal, kernels::RopeLayout::kNeox}) {
      cfg.layout = layout;
      float cache[128];
      std::vector<float> q(x.begin(), x.begin() + 32 * 128);
      const bool neox = layout == kernels::RopeLayout::kNeox;
      report(neox ? "rope-neox" : "rope-normal", 32 * 128, 8.0 * 32 * 128, [&] {
        kernels::rope_cache(cfg, 777, cache);
        for (int hd = 0; hd < 32; ++hd) t.rope_rotate(cache, q.data() + hd * 128, 128, neox);
      });
    }
  }
}

void run_attention(const BenchOptions& opt, const Peaks& peaks) {
  // A llama-3-8B-like layer: 32 query heads, 8 KV heads, head_dim 128.
  kernels::AttentionShape shape{32, 8, 128, 8 * 128, 1.0f / std::sqrt(128.0f)};
  const int64_t max_kv = 4096;
  const size_t cache_elems = static_cast<size_t>(max_kv) * shape.kv_stride;
  const size_t cache_bytes = 2 * cache_elems * sizeof(uint16_t);  // K and V
  const int copies = std::max(2, static_cast<int>(std::ceil(4.0 * peaks.llc_bytes / cache_bytes)) + 1);
  std::vector<AlignedBuffer> ks, vs;
  {
    const auto f = random_floats(cache_elems, 5);
    std::vector<uint16_t> hf(cache_elems);
    for (size_t i = 0; i < cache_elems; ++i) hf[i] = fp32_to_fp16(f[i]);
    for (int c = 0; c < copies; ++c) {
      ks.emplace_back(cache_elems * 2);
      vs.emplace_back(cache_elems * 2);
      std::memcpy(ks.back().data(), hf.data(), cache_elems * 2);
      std::memcpy(vs.back().data(), hf.data(), cache_elems * 2);
    }
  }
  const int64_t max_q = 16;
  const auto q = random_floats(static_cast<size_t>(max_q * 32 * 128), 6, 2.0f);
  std::vector<float> out(q.size());

  for (int64_t n_kv : {int64_t{512}, int64_t{4096}}) {
    for (int64_t n_q : {int64_t{1}, max_q}) {
      for (kernels::Isa isa : opt.isas) {
        for (int nth : opt.threads) {
          kernels::ThreadPool pool(nth);
          std::vector<kernels::AttentionQuery> queries(static_cast<size_t>(n_q));
          auto run_once = [&](int rep) {
            // Every query reads its own cache copy (as separate sequences would).
            for (int64_t i = 0; i < n_q; ++i) {
              const size_t c = static_cast<size_t>(rep * n_q + i) % ks.size();
              queries[static_cast<size_t>(i)] = {q.data() + i * 32 * 128, ks[c].as<uint16_t>(), vs[c].as<uint16_t>(),
                                                 n_kv, out.data() + i * 32 * 128};
            }
            kernels::attention(pool, shape, queries, isa);
          };
          run_once(0);
          const double sec = median_seconds(opt.reps, opt.budget_s, run_once);
          const double bytes = static_cast<double>(n_q * n_kv) * shape.n_head_kv * shape.head_dim * 2 * 2;
          const double flops = 4.0 * static_cast<double>(n_q * n_kv) * shape.n_head * shape.head_dim;
          const auto bw = peaks.read_gbs.find(nth);
          print_row(Row{"attention", "f16 kv", fmt::format("n_kv={} n_q={} 32/8x128", n_kv, n_q),
                        std::string(kernels::isa_name(isa)), nth, sec, bytes / sec / 1e9, flops / sec / 1e9,
                        bw != peaks.read_gbs.end() ? 100.0 * bytes / sec / 1e9 / bw->second : NAN, "GB/s of K+V read"});
        }
      }
    }
  }
}

}  // namespace baton::bench
