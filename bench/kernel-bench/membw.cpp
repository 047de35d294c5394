// The machine's speed limits, measured here rather than taken from a datasheet: read bandwidth
// (a 1 GiB read-sum, each thread its own slice) and f32 FMA throughput per ISA.
#include <immintrin.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>

#include "bench/kernel-bench/bench_util.h"
#include "engine/base/aligned_buffer.h"
#include "kernels/thread_pool.h"

namespace baton::bench {
namespace {

constexpr size_t kBandwidthBytes = size_t{1} << 30;

uint64_t read_sum(const uint64_t* p, size_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = 0; i + 4 <= n; i += 4) {
    a += p[i];
    b += p[i + 1];
    c += p[i + 2];
    d += p[i + 3];
  }
  return a + b + c + d;
}

// Twelve independent FMA chains (named, so they stay in registers), enough to cover the
// latency of two FMA pipes.
#define BATON_FMA12(F) \
  a0 = F(a0, m, c); a1 = F(a1, m, c); a2 = F(a2, m, c); a3 = F(a3, m, c); a4 = F(a4, m, c); a5 = F(a5, m, c); \
  a6 = F(a6, m, c); a7 = F(a7, m, c); a8 = F(a8, m, c); a9 = F(a9, m, c); a10 = F(a10, m, c); a11 = F(a11, m, c);

__attribute__((target("avx512f"))) float fma_loop_avx512(int64_t iters) {
  __m512 a0 = _mm512_set1_ps(1.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0,
         a10 = a0, a11 = a0;
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
    BATON_FMA12(_mm512_fmadd_ps)
  }
  const __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                                 _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)),
                                               _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11))));
  float out[16];
  _mm512_storeu_ps(out, s);
  return out[0];
}

__attribute__((target("avx2,fma"))) float fma_loop_avx2(int64_t iters) {
  __m256 a0 = _mm256_set1_ps(1.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0,
         a10 = a0, a11 = a0;
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
    BATON_FMA12(_mm256_fmadd_ps)
  }
  const __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                                 _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)),
                                               _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11))));
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0];
}

#undef BATON_FMA12

// The last-level cache as the kernel reports it (lscpu's source); sysconf as a fallback.
double llc_bytes() {
  if (std::FILE* f = std::fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r")) {
    unsigned long kib = 0;
    const int got = std::fscanf(f, "%luK", &kib);
    std::fclose(f);
    if (got == 1 && kib > 0) return static_cast<double>(kib) * 1024;
  }
  const long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return v > 0 ? static_cast<double>(v) : 32.0 * 1024 * 1024;
}

}  // namespace

uint64_t read_sum_bytes(const void* p, size_t bytes, kernels::ThreadPool& pool) {
  const auto* words = static_cast<const uint64_t*>(p);
  const size_t n_words = bytes / sizeof(uint64_t);
  std::atomic<uint64_t> total{0};
  pool.run([&](int ith, int n) {
    const size_t per = n_words / static_cast<size_t>(n) / 4 * 4;
    total += read_sum(words + per * static_cast<size_t>(ith), per);
  });
  return total;
}

void run_membw(const BenchOptions& opt, Peaks& peaks) {
  peaks.llc_bytes = llc_bytes();
  AlignedBuffer buf(kBandwidthBytes);
  std::memset(buf.data(), 1, kBandwidthBytes);  // fault every page in before timing
  const auto* words = buf.as<uint64_t>();
  const size_t n_words = kBandwidthBytes / sizeof(uint64_t);
  volatile uint64_t sink = 0;

  for (int nth : opt.threads) {
    kernels::ThreadPool pool(nth);
    const double s = median_seconds(std::max(5, opt.reps / 3), 30.0, [&](int) {
      pool.run([&](int ith, int n) {
        const size_t per = n_words / static_cast<size_t>(n) / 4 * 4;
        sink = sink + read_sum(words + per * static_cast<size_t>(ith), per);
      });
    });
    peaks.read_gbs[nth] = kBandwidthBytes / s / 1e9;
    Row row{"membw", "-", "1 GiB read-sum", "-", nth, s, peaks.read_gbs[nth], NAN, 100.0,
            fmt::format("LLC {:.0f} MiB", peaks.llc_bytes / 1048576)};
    print_row(row);
  }

  for (kernels::Isa isa : opt.isas) {
    if (isa == kernels::Isa::kScalar) continue;
    const int lanes = isa == kernels::Isa::kAvx512 ? 16 : 8;
    const int64_t iters = 20'000'000;
    for (int nth : opt.threads) {
      kernels::ThreadPool pool(nth);
      volatile float fsink = 0;
      const double s = median_seconds(3, 30.0, [&](int) {
        pool.run([&](int, int) {
          fsink = fsink + (isa == kernels::Isa::kAvx512 ? fma_loop_avx512(iters) : fma_loop_avx2(iters));
        });
      });
      const double gflops = 2.0 * lanes * 12 * static_cast<double>(iters) * nth / s / 1e9;
      peaks.fma_gflops[{static_cast<int>(isa), nth}] = gflops;
      print_row(Row{"fma-peak", "f32", "12 chains", std::string(kernels::isa_name(isa)), nth, s, NAN, gflops, 100.0, ""});
    }
  }
}

}  // namespace baton::bench
