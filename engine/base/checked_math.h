// Overflow-checked size arithmetic for anything derived from untrusted input.
#pragma once

#include <cstdint>
#include <optional>

namespace baton {

inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Rounds `value` up to a multiple of `alignment` (> 0); nullopt on overflow.
inline std::optional<uint64_t> checked_align_up(uint64_t value, uint64_t alignment) {
  auto bumped = checked_add(value, alignment - 1);
  if (!bumped) return std::nullopt;
  return *bumped / alignment * alignment;
}

}  // namespace baton
