// The machine's speed limits, measured here rather than taken from a datasheet: read bandwidth
// (a 1 GiB read-sum, each thread its own slice), f32 FMA throughput and int8 dot throughput per
// ISA (the yardstick of the quantized kernels once several tokens make them compute bound).
#include <immintrin.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>

#include "bench/kernel-bench/bench_util.h"
#include "engine/base/aligned_buffer.h"
#include "kernels/core/thread_pool.h"

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
  a0 = F(a0, m, c);    \
  a1 = F(a1, m, c);    \
  a2 = F(a2, m, c);    \
  a3 = F(a3, m, c);    \
  a4 = F(a4, m, c);    \
  a5 = F(a5, m, c);    \
  a6 = F(a6, m, c);    \
  a7 = F(a7, m, c);    \
  a8 = F(a8, m, c);    \
  a9 = F(a9, m, c);    \
  a10 = F(a10, m, c);  \
  a11 = F(a11, m, c);

__attribute__((target("avx512f"))) float fma_loop_avx512(int64_t iters) {
  // Distinct starting values: identical chains would be merged into one by the compiler (which
  // made this loop measure one chain's latency, a third of the throughput, until session 8).
  __m512 a0 = _mm512_set1_ps(1.0f), a1 = _mm512_set1_ps(1.1f), a2 = _mm512_set1_ps(1.2f), a3 = _mm512_set1_ps(1.3f),
         a4 = _mm512_set1_ps(1.4f), a5 = _mm512_set1_ps(1.5f), a6 = _mm512_set1_ps(1.6f), a7 = _mm512_set1_ps(1.7f),
         a8 = _mm512_set1_ps(1.8f), a9 = _mm512_set1_ps(1.9f), a10 = _mm512_set1_ps(2.0f), a11 = _mm512_set1_ps(2.1f);
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
  __m256 a0 = _mm256_set1_ps(1.0f), a1 = _mm256_set1_ps(1.1f), a2 = _mm256_set1_ps(1.2f), a3 = _mm256_set1_ps(1.3f),
         a4 = _mm256_set1_ps(1.4f), a5 = _mm256_set1_ps(1.5f), a6 = _mm256_set1_ps(1.6f), a7 = _mm256_set1_ps(1.7f),
         a8 = _mm256_set1_ps(1.8f), a9 = _mm256_set1_ps(1.9f), a10 = _mm256_set1_ps(2.0f), a11 = _mm256_set1_ps(2.1f);
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

// Twelve int8 dot chains (distinct, see fma_loop_avx512), each step 64 (zmm) or 32 (ymm) u8 x s8
// multiply-adds into int32 lanes.
// The maddubs chains feed their own accumulator back as the unsigned bytes, so nothing is loop
// invariant; their latency (maddubs + madd + add) is covered by the 12 chains.
// The body of a zmm dot loop: 12 chains a0..a11 stepped by F(a) `iters` times, then summed.
#define BATON_DOT12_ZMM_BODY(F)                                                                                       \
  __m512i a0 = _mm512_set1_epi32(1), a1 = _mm512_set1_epi32(2), a2 = _mm512_set1_epi32(3), a3 = _mm512_set1_epi32(4), \
          a4 = _mm512_set1_epi32(5), a5 = _mm512_set1_epi32(6), a6 = _mm512_set1_epi32(7), a7 = _mm512_set1_epi32(8), \
          a8 = _mm512_set1_epi32(9), a9 = _mm512_set1_epi32(10), a10 = _mm512_set1_epi32(11),                         \
          a11 = _mm512_set1_epi32(12);                                                                                \
  for (int64_t i = 0; i < iters; ++i) {                                                                               \
    a0 = F(a0);                                                                                                       \
    a1 = F(a1);                                                                                                       \
    a2 = F(a2);                                                                                                       \
    a3 = F(a3);                                                                                                       \
    a4 = F(a4);                                                                                                       \
    a5 = F(a5);                                                                                                       \
    a6 = F(a6);                                                                                                       \
    a7 = F(a7);                                                                                                       \
    a8 = F(a8);                                                                                                       \
    a9 = F(a9);                                                                                                       \
    a10 = F(a10);                                                                                                     \
    a11 = F(a11);                                                                                                     \
  }                                                                                                                   \
  const __m512i t =                                                                                                   \
      _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3)),                          \
                       _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(a4, a5), _mm512_add_epi32(a6, a7)),         \
                                        _mm512_add_epi32(_mm512_add_epi32(a8, a9), _mm512_add_epi32(a10, a11))));     \
  alignas(64) int32_t out[16];                                                                                        \
  _mm512_store_si512(out, t);                                                                                         \
  return out[0] + out[15];

__attribute__((target("avx512f,avx512bw,avx512vnni"))) int32_t dot_loop_vnni(int64_t iters) {
  const __m512i u = _mm512_set1_epi32(0x01020304), s = _mm512_set1_epi32(0x01FF01FF);
#define BATON_STEP(a) _mm512_dpbusd_epi32(a, u, s)
  BATON_DOT12_ZMM_BODY(BATON_STEP)
#undef BATON_STEP
}

__attribute__((target("avx512f,avx512bw"))) int32_t dot_loop_avx512bw(int64_t iters) {
  const __m512i s = _mm512_set1_epi32(0x01FF01FF), ones = _mm512_set1_epi16(1);
#define BATON_STEP(a) _mm512_add_epi32(a, _mm512_madd_epi16(_mm512_maddubs_epi16(a, s), ones))
  BATON_DOT12_ZMM_BODY(BATON_STEP)
#undef BATON_STEP
}

#undef BATON_DOT12_ZMM_BODY

// Eight chains here: twelve accumulators plus the constants exceed AVX2's 16 registers (spills
// halved the rate); eight cover the chain latency as well.
__attribute__((target("avx2"))) int32_t dot_loop_avx2(int64_t iters) {
  __m256i a0 = _mm256_set1_epi32(1), a1 = _mm256_set1_epi32(2), a2 = _mm256_set1_epi32(3), a3 = _mm256_set1_epi32(4),
          a4 = _mm256_set1_epi32(5), a5 = _mm256_set1_epi32(6), a6 = _mm256_set1_epi32(7), a7 = _mm256_set1_epi32(8);
  const __m256i s = _mm256_set1_epi32(0x01FF01FF), ones = _mm256_set1_epi16(1);
#define BATON_STEP(a) _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_maddubs_epi16(a, s), ones))
  for (int64_t i = 0; i < iters; ++i) {
    a0 = BATON_STEP(a0);
    a1 = BATON_STEP(a1);
    a2 = BATON_STEP(a2);
    a3 = BATON_STEP(a3);
    a4 = BATON_STEP(a4);
    a5 = BATON_STEP(a5);
    a6 = BATON_STEP(a6);
    a7 = BATON_STEP(a7);
  }
#undef BATON_STEP
  const __m256i t = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)),
                                     _mm256_add_epi32(_mm256_add_epi32(a4, a5), _mm256_add_epi32(a6, a7)));
  alignas(32) int32_t out[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(out), t);
  return out[0] + out[7];
}

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
    Row row{"membw",
            "-",
            "1 GiB read-sum",
            "-",
            nth,
            s,
            peaks.read_gbs[nth],
            NAN,
            100.0,
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
      print_row(
          Row{"fma-peak", "f32", "12 chains", std::string(kernels::isa_name(isa)), nth, s, NAN, gflops, 100.0, ""});
    }
    const bool vnni = isa == kernels::Isa::kAvx512 && kernels::has_avx512_vnni();
    const char* dot_how = vnni ? "vpdpbusd" : "vpmaddubsw+vpmaddwd+vpaddd";
    for (int nth : opt.threads) {
      kernels::ThreadPool pool(nth);
      volatile int32_t isink = 0;
      const double s = median_seconds(3, 30.0, [&](int) {
        pool.run([&](int, int) {
          isink = isink + (vnni                           ? dot_loop_vnni(iters)
                           : isa == kernels::Isa::kAvx512 ? dot_loop_avx512bw(iters)
                                                          : dot_loop_avx2(iters));
        });
      });
      const int chains = isa == kernels::Isa::kAvx512 ? 12 : 8;
      const double gops = 2.0 * 4 * lanes * chains * static_cast<double>(iters) * nth / s / 1e9;
      peaks.dot_gops[{static_cast<int>(isa), nth}] = gops;
      print_row(Row{"dot-peak", "i8", fmt::format("{} chains {}", chains, dot_how), std::string(kernels::isa_name(isa)),
                    nth, s, NAN, gops, 100.0, "GOP/s column: int8 ops"});
    }
  }
}

}  // namespace baton::bench
