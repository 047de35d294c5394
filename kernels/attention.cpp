// The attention driver: checks the shape once, splits queries × KV-head groups across the
// pool, and hands each group to the ISA's kernel with per-thread scratch.
#include "kernels/attention.h"

#include <algorithm>
#include <atomic>

#include "engine/base/aligned_buffer.h"
#include "kernels/attention_internal.h"
#include "kernels/ops_internal.h"

namespace baton::kernels {
namespace {

AttendGroupFn kernel_for(Isa isa) {
  BATON_KERNEL_CHECK(static_cast<int>(isa) <= static_cast<int>(detected_isa()));
  switch (isa) {
    case Isa::kAvx512: return avx512::attend_group;
    case Isa::kAvx2: return avx2::attend_group;
    case Isa::kScalar: break;
  }
  return scalar::attend_group;
}

// Grows once to the largest group seen on this thread; no allocation in steady state.
float* thread_scratch(size_t floats) {
  thread_local AlignedBuffer buffer;
  buffer.resize(floats * sizeof(float));
  return buffer.as<float>();
}

void check_shape(const AttentionShape& s) {
  BATON_KERNEL_CHECK(s.n_head > 0 && s.n_head_kv > 0 && s.n_head % s.n_head_kv == 0);
  BATON_KERNEL_CHECK(s.n_head / s.n_head_kv <= AttentionShape::kMaxGroup);
  BATON_KERNEL_CHECK(s.head_dim > 0 && s.head_dim <= AttentionShape::kMaxHeadDim);
  BATON_KERNEL_CHECK(s.kv_stride >= static_cast<size_t>(s.n_head_kv * s.head_dim));
}

// Runs heads [h0, h0 + n_q) of one query; they all read KV head kvh.
void run_group(AttendGroupFn fn, const AttentionShape& s, const AttentionQuery& q, int64_t kvh, int64_t h0,
               int64_t n_q) {
  BATON_KERNEL_CHECK(q.n_kv >= 1 && q.q && q.k && q.v && q.out);
  AttentionGroup g;
  g.q = q.q + h0 * s.head_dim;
  g.k = q.k + kvh * s.head_dim;
  g.v = q.v + kvh * s.head_dim;
  g.out = q.out + h0 * s.head_dim;
  g.n_q = n_q;
  g.head_dim = s.head_dim;
  g.n_kv = q.n_kv;
  g.kv_stride = s.kv_stride;
  g.scale = s.scale;
  g.scratch = thread_scratch(attention_scratch_floats(n_q, s.head_dim));
  fn(g);
}

}  // namespace

void attention_one(const AttentionShape& shape, const AttentionQuery& query, Isa isa) {
  check_shape(shape);
  const AttendGroupFn fn = kernel_for(isa);
  const int64_t group = shape.n_head / shape.n_head_kv;
  for (int64_t kvh = 0; kvh < shape.n_head_kv; ++kvh) run_group(fn, shape, query, kvh, kvh * group, group);
}

void attention(ThreadPool& pool, const AttentionShape& shape, std::span<const AttentionQuery> queries, Isa isa) {
  check_shape(shape);
  if (queries.empty()) return;
  const AttendGroupFn fn = kernel_for(isa);
  const int64_t group = shape.n_head / shape.n_head_kv;
  const int64_t n_q = static_cast<int64_t>(queries.size());
  // Each task is a slice of one GQA group of one query. Slices only change how many heads share
  // a pass over K/V, never a head's arithmetic; they are split only when there would otherwise
  // be fewer than two tasks per thread.
  const int64_t groups = n_q * shape.n_head_kv;
  const int64_t want = 2 * static_cast<int64_t>(pool.n_threads());
  const int64_t splits = groups >= want ? 1 : std::min(group, (want + groups - 1) / groups);
  const int64_t slice = (group + splits - 1) / splits;
  const int64_t slices_per_group = (group + slice - 1) / slice;
  const int64_t n_tasks = groups * slices_per_group;

  std::atomic<int64_t> next{0};
  pool.run(
      [&](int, int) {
        for (int64_t t = next.fetch_add(1, std::memory_order_relaxed); t < n_tasks;
             t = next.fetch_add(1, std::memory_order_relaxed)) {
          const int64_t qi = t / (shape.n_head_kv * slices_per_group);
          const int64_t rest = t % (shape.n_head_kv * slices_per_group);
          const int64_t kvh = rest / slices_per_group;
          const int64_t h0 = kvh * group + (rest % slices_per_group) * slice;
          const int64_t n_heads = std::min(slice, (kvh + 1) * group - h0);
          run_group(fn, shape, queries[static_cast<size_t>(qi)], kvh, h0, n_heads);
        }
      },
      static_cast<int>(std::min<int64_t>(pool.n_threads(), n_tasks)));
}

}  // namespace baton::kernels
