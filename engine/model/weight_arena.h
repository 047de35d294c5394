// Anonymous memory for weights copied out of the mmap at load (repacked or not), backed by
// transparent huge pages where the kernel allows (madvise MADV_HUGEPAGE): decode streams every
// weight once per token, and with 4 KiB pages the TLB misses cost it ~25 % of its bandwidth
// (Zen 4, Q4_0 5632x2048 from DRAM: 20 GB/s on 4 KiB pages, 28 GB/s on 2 MiB pages).
// Owns the mapping; move-only; allocate() is not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace baton {

class WeightArena {
 public:
  static constexpr size_t kAlignment = 64;

  // Reserves `bytes` (rounded up to whole 2 MiB pages; nothing is touched). Throws baton::Error
  // naming the size when the mapping fails.
  explicit WeightArena(size_t bytes);
  ~WeightArena();
  WeightArena(const WeightArena&) = delete;
  WeightArena& operator=(const WeightArena&) = delete;

  // The next `bytes` of the arena, kAlignment-aligned. Throws baton::Error when they do not fit
  // (a sizing bug of the caller).
  uint8_t* allocate(size_t bytes);

  size_t capacity() const { return capacity_; }
  size_t used() const { return used_; }

  // Rounds up to the arena's alignment: what allocate(bytes) consumes.
  static size_t padded(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

 private:
  uint8_t* base_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;
};

}  // namespace baton
