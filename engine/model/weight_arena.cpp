#include "engine/model/weight_arena.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "engine/base/error.h"

namespace baton {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

WeightArena::WeightArena(size_t bytes) : capacity_(round_up(bytes == 0 ? 1 : bytes, kHugePage)) {
  // Over-map by one huge page and trim, so that the arena starts on a 2 MiB boundary (huge pages
  // only back aligned 2 MiB ranges).
  const size_t mapped = capacity_ + kHugePage;
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    fail("weight memory: mmap of {} bytes failed: {}", mapped, std::strerror(e));
  }
  const auto raw = reinterpret_cast<uintptr_t>(p);
  const uintptr_t start = round_up(raw, kHugePage);
  if (start > raw) ::munmap(p, start - raw);
  const uintptr_t end = start + capacity_;
  if (raw + mapped > end) ::munmap(reinterpret_cast<void*>(end), raw + mapped - end);
  base_ = reinterpret_cast<uint8_t*>(start);
  ::madvise(base_, capacity_, MADV_HUGEPAGE);  // advisory: without THP the arena still works
}

WeightArena::~WeightArena() {
  if (base_) ::munmap(base_, capacity_);
}

uint8_t* WeightArena::allocate(size_t bytes) {
  const size_t need = padded(bytes);
  if (need > capacity_ - used_)
    fail("weight memory: {} more bytes requested, {} of {} left", bytes, capacity_ - used_, capacity_);
  uint8_t* p = base_ + used_;
  used_ += need;
  return p;
}

}  // namespace baton
