// Internal to kernels/: the per-ISA attention kernel for one query token and a contiguous range
// of its query heads, its scratch, and the canonical F16 dot product.
#pragma once

#include <cstddef>
#include <cstdint>

namespace baton::kernels {

// Sizes the per-task scratch (historical: the chunk of the earlier f32-accumulator kernels).
constexpr int64_t kAttentionChunk = 64;

// Heads [h0, h1) of one query; head h reads KV head h / group. Each position is visited once
// for all heads of the range, so the cache is walked front to back once (on a
// [pos][kv_head][dim] cache a per-head walk would touch every page once per KV head).
struct AttentionTask {
  const float* q;     // [n_head][head_dim] of the query (head h at q + h * head_dim)
  const uint16_t* k;  // position 0, KV head 0; position p, KV head j at k + p * kv_stride + j * head_dim
  const uint16_t* v;
  float* out;        // [n_head][head_dim]
  int64_t h0, h1;    // head range, 0 <= h0 < h1 <= n_head
  int64_t group;     // n_head / n_head_kv
  int64_t head_dim;  // 1 .. kMaxHeadDim
  int64_t n_kv;      // >= 1
  size_t kv_stride;  // F16 elements
  float scale;
  bool tiled;      // llama.cpp's tiled mode (head_dim % 8 == 0 guaranteed)
  float* scratch;  // attention_scratch_floats(h1 - h0, head_dim) floats, 64-byte aligned
};

// KV positions per tile of the tiled mode (llama.cpp's GGML_FA_TILE_KV).
constexpr int64_t kAttentionKvTile = 64;

// one_chunk: per head q and the accumulator (head_dim rounded up to 16 each), the running max
// and sum, the current position's score and exponential; tiled: per head the accumulator, the
// tile's scores, max and sum, plus one K tile transposed to f32. (The kernels use no more.)
inline size_t attention_scratch_floats(int64_t n_heads, int64_t head_dim) {
  const size_t d = static_cast<size_t>((head_dim + 15) / 16 * 16);
  return static_cast<size_t>(n_heads) * (2 * d + kAttentionChunk + 16) + static_cast<size_t>(kAttentionKvTile) * d;
}

namespace scalar {
// The tiled mode's reference (attention_scalar.cpp), for heads [t.h0, t.h1) of one query.
void attend_tiled(const AttentionTask& t);
// The 8 softmax exponentials of one group and their sum as llama.cpp's AVX2
// ggml_vec_soft_max_f32 adds it: e[l] = ggml_v_expf(x[l] - max); returns
// ((e0+e4)+(e2+e6))+((e1+e5)+(e3+e7)).
float softmax_group8(float* x, float max);
}  // namespace scalar

// q·k of two F16 vectors in the reduction order of llama.cpp's ggml_vec_dot_f16 (the build
// that produced the golden outputs): see attention_scalar.cpp / docs/NUMERICS.md. Every ISA's
// attention calls this scalar definition or reproduces it exactly.
float attention_dot_f16(const uint16_t* x, const uint16_t* y, int64_t n);

using AttendFn = void (*)(const AttentionTask& t);

namespace scalar {
void attend(const AttentionTask& t);
}
namespace avx2 {
void attend(const AttentionTask& t);
}
namespace avx512 {
void attend(const AttentionTask& t);
}

// y[i] = std::exp(x[i]), bitwise as glibc's expf computes it (attention/expf_glibc_simd.inc).
namespace avx2 {
void expf_glibc(const float* x, float* y, int64_t n);
}
namespace avx512 {
void expf_glibc(const float* x, float* y, int64_t n);
}

}  // namespace baton::kernels
