// Attention of query tokens over their sequences' F16 KV caches, reproducing bit for bit
// llama.cpp's two CPU flash-attention modes (AVX2 build, 1 thread; see docs/NUMERICS.md):
// - one_chunk (decodes, small micro-batches; ggml_compute_forward_flash_attn_ext_f16_one_chunk):
//   Q rounded to F16; one KV position at a time: s = dot_f16(q, k)·scale in ggml_vec_dot_f16's
//   AVX2 reduction order, online softmax with libm expf, V accumulated in F16 (rounded after
//   every rescale and every fma), the F16 sum converted to f32 and multiplied by 1/S at the end.
//   (Its split-KV variant for decodes over >= 512 cells is the same arithmetic on one thread.)
// - tiled (AttentionQuery::tiled: the query's sequence has >= kAttentionTiledMinRows rows in the
//   pass; ggml_compute_forward_flash_attn_ext_tiled): f32 Q; KV in tiles of 64 positions from
//   position 0; per tile the scores (one f32 fma chain over the head dims, times scale), the tile
//   max, a rescale by libm expf(M_old - M_new), exponentials by ggml_v_expf in groups of 8 summed
//   in double onto the f32 sum, and an f32 V accumulator (fma chain over the tile's positions).
// Every ISA gives bitwise the scalar reference's result.
//
// Design goals: a query's result depends only on its q, its cache and n_kv — never on the other
// queries in the batch or on the thread count (positions are processed one by one from
// position 0); one front-to-back pass over the cache for all heads of a query (a per-head pass
// over a [pos][kv_head][dim] cache would touch every page once per KV head), so that long
// contexts run at memory speed; GQA heads sharing a KV head reuse its K/V rows from L1.
// Non-goals: masks other than causal length, ALiBi, logit soft-capping, quantized KV caches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/core/isa.h"
#include "kernels/core/thread_pool.h"

namespace baton::kernels {

struct AttentionShape {
  int64_t n_head = 0;     // query heads
  int64_t n_head_kv = 0;  // KV heads; n_head % n_head_kv == 0, head h reads KV head h / (n_head / n_head_kv)
  int64_t head_dim = 0;   // <= kMaxHeadDim
  size_t kv_stride = 0;   // F16 elements from one cache position to the next (>= n_head_kv * head_dim)
  float scale = 0.0f;     // applied to q·k (usually 1/sqrt(head_dim))

  static constexpr int64_t kMaxHeadDim = 512;
};

// One query token: position p of KV head j is at k + p * kv_stride + j * head_dim (likewise v).
struct AttentionQuery {
  const float* q = nullptr;     // [n_head, head_dim]
  const uint16_t* k = nullptr;  // F16 [n_kv][n_head_kv][head_dim] (row stride kv_stride)
  const uint16_t* v = nullptr;  // F16, same layout
  int64_t n_kv = 0;             // positions 0 .. n_kv-1 are visible (causal: the token's pos + 1); >= 1
  float* out = nullptr;         // [n_head, head_dim]
  bool tiled = false;           // llama.cpp's tiled mode (one_chunk when head_dim % 8 != 0, as there)
};

// llama.cpp takes the tiled mode for micro-batches of at least this many query rows (we count
// the rows of the query's own sequence: a query's result never depends on other sequences).
constexpr int64_t kAttentionTiledMinRows = 64;

// Computes every query's output on the pool (work split over queries, and over head ranges
// when there are fewer queries than twice the threads).
// The shape is checked once at entry (a broken precondition is fatal: see BATON_KERNEL_CHECK).
void attention(ThreadPool& pool, const AttentionShape& shape, std::span<const AttentionQuery> queries,
               Isa isa = active_isa());

// Single-threaded, for one query (tests, tiny models).
void attention_one(const AttentionShape& shape, const AttentionQuery& query, Isa isa = active_isa());

}  // namespace baton::kernels
