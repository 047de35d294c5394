// Prefetch of a weight block into L2 (_MM_HINT_T1) or L1 (T0), for kernels that stream weights
// from DRAM.
// Which hint suits which kernel was measured per machine (docs/BENCHMARKS.md, Kernel notes). The address is an
// integer: callers prefetch ahead of where they read, which may lie past the end of the weights
// (prefetches never fault; a pointer there would be undefined).
// Included by ISA translation units; internal linkage keeps each one's copy.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace baton::kernels {
namespace {  // NOLINT: one copy per ISA translation unit

// The cache lines of [addr, addr + kBytes).
template <size_t kBytes>
inline void prefetch_l2(uintptr_t addr) {
#pragma GCC unroll 64
  for (size_t line = 0; line < kBytes; line += 64)
    _mm_prefetch(reinterpret_cast<const char*>(addr + line), _MM_HINT_T1);
}

// The same into L1 (_MM_HINT_T0): what the repacked K-quant passes use.
template <size_t kBytes>
inline void prefetch_l1(uintptr_t addr) {
#pragma GCC unroll 64
  for (size_t line = 0; line < kBytes; line += 64)
    _mm_prefetch(reinterpret_cast<const char*>(addr + line), _MM_HINT_T0);
}

// The cache lines of [addr, addr + bytes), for a length known only at run time.
inline void prefetch_l2_range(uintptr_t addr, size_t bytes) {
  for (uintptr_t line = addr & ~uintptr_t{63}; line < addr + bytes; line += 64)
    _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T1);
}

}  // namespace
}  // namespace baton::kernels
