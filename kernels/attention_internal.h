// Internal to kernels/: the per-ISA attention kernel for one group of query heads sharing a
// KV head, and the chunking every variant uses.
#pragma once

#include <cstddef>
#include <cstdint>

namespace baton::kernels {

// Positions are processed in chunks of this many, starting at position 0, in every variant.
constexpr int64_t kAttentionChunk = 64;

struct AttentionGroup {
  const float* q;          // [n_q][head_dim], the group's query heads, contiguous
  const uint16_t* k;       // position 0 of this KV head; position p at k + p * kv_stride
  const uint16_t* v;
  float* out;              // [n_q][head_dim]
  int64_t n_q;             // heads in the group, 1 .. kMaxGroup
  int64_t head_dim;        // 1 .. kMaxHeadDim
  int64_t n_kv;            // >= 1
  size_t kv_stride;        // F16 elements
  float scale;
  // Scratch of at least attention_scratch_floats(n_q, head_dim) floats, 64-byte aligned.
  float* scratch;
};

inline size_t attention_scratch_floats(int64_t n_q, int64_t head_dim) {
  const size_t d = static_cast<size_t>((head_dim + 15) / 16 * 16);
  return static_cast<size_t>(n_q) * (2 * d + kAttentionChunk + 16);
}

using AttendGroupFn = void (*)(const AttentionGroup& g);

namespace scalar { void attend_group(const AttentionGroup& g); }
namespace avx2 { void attend_group(const AttentionGroup& g); }
namespace avx512 { void attend_group(const AttentionGroup& g); }

}  // namespace baton::kernels
