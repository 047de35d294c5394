// The attention driver: checks the shape once, splits queries × KV-head groups across the
// pool, and hands each group to the ISA's kernel with per-thread scratch.
#include "kernels/attention/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "engine/base/aligned_buffer.h"
#include "engine/base/fp16.h"
#include "kernels/attention/attention_internal.h"
#include "kernels/ops/ops_internal.h"

namespace baton::kernels {
namespace {

AttendFn kernel_for(Isa isa) {
  BATON_KERNEL_CHECK(isa_supported(isa));
  switch (isa) {
    case Isa::kAvx512: return avx512::attend;
    case Isa::kAvx2:
    case Isa::kAvxVnni: return avx2::attend;  // float attention: AVX2's
    case Isa::kScalar: break;
  }
  return scalar::attend;
}

// Grows once to the largest task seen on this thread; no allocation in steady state.
float* thread_scratch(size_t floats) {
  thread_local AlignedBuffer buffer;
  buffer.resize(floats * sizeof(float));
  return buffer.as<float>();
}

void check_shape(const AttentionShape& s) {
  BATON_KERNEL_CHECK(s.n_head > 0 && s.n_head_kv > 0 && s.n_head % s.n_head_kv == 0);
  BATON_KERNEL_CHECK(s.head_dim > 0 && s.head_dim <= AttentionShape::kMaxHeadDim);
  BATON_KERNEL_CHECK(s.kv_stride >= static_cast<size_t>(s.n_head_kv * s.head_dim));
}

// Heads [h0, h1) of one query.
void run_task(AttendFn fn, const AttentionShape& s, const AttentionQuery& q, int64_t h0, int64_t h1) {
  BATON_KERNEL_CHECK(q.n_kv >= 1 && q.q && q.k && q.v && q.out);
  AttentionTask t;
  t.q = q.q;
  t.k = q.k;
  t.v = q.v;
  t.out = q.out;
  t.h0 = h0;
  t.h1 = h1;
  t.group = s.n_head / s.n_head_kv;
  t.head_dim = s.head_dim;
  t.n_kv = q.n_kv;
  t.kv_stride = s.kv_stride;
  t.scale = s.scale;
  t.tiled = q.tiled && s.head_dim % 8 == 0;
  t.scratch = thread_scratch(attention_scratch_floats(h1 - h0, s.head_dim));
  fn(t);
}

}  // namespace

void attention_one(const AttentionShape& shape, const AttentionQuery& query, Isa isa) {
  check_shape(shape);
  run_task(kernel_for(isa), shape, query, 0, shape.n_head);
}

void attention(ThreadPool& pool, const AttentionShape& shape, std::span<const AttentionQuery> queries, Isa isa) {
  check_shape(shape);
  if (queries.empty()) return;
  const AttendFn fn = kernel_for(isa);
  // A task is a range of one query's heads; one range per query when there are enough queries
  // to keep every thread busy (each task then walks its cache front to back once). Otherwise
  // the heads are split, at KV-head boundaries while there are enough of them. A head's
  // arithmetic never depends on the split.
  const int64_t n_q = static_cast<int64_t>(queries.size());
  const int64_t want = 2 * static_cast<int64_t>(pool.n_threads());
  const int64_t splits = n_q >= want ? 1 : std::min(shape.n_head, (want + n_q - 1) / n_q);
  const int64_t group = shape.n_head / shape.n_head_kv;
  auto boundary = [&](int64_t s) {  // head where split s starts
    if (splits <= shape.n_head_kv) return s * shape.n_head_kv / splits * group;
    return s * shape.n_head / splits;
  };
  const int64_t n_tasks = n_q * splits;

  std::atomic<int64_t> next{0};
  pool.run(
      [&](int, int) {
        for (int64_t t = next.fetch_add(1, std::memory_order_relaxed); t < n_tasks;
             t = next.fetch_add(1, std::memory_order_relaxed)) {
          const int64_t qi = t / splits, si = t % splits;
          const int64_t h0 = boundary(si), h1 = boundary(si + 1);
          if (h1 > h0) run_task(fn, shape, queries[static_cast<size_t>(qi)], h0, h1);
        }
      },
      static_cast<int>(std::min<int64_t>(pool.n_threads(), n_tasks)));
}

}  // namespace baton::kernels

namespace baton::kernels {

// ggml_vec_dot_f16's order in an AVX2 build: blocks of 32 into 4 accumulators of 8 lanes
// (fma), folded (0+2, 1+3, 0+1), 128-bit halves added, then ((l0+l1)+(l2+l3)); the leftover
// (n mod 32) products rounded to f32 and added in double; the result rounded to f32.
float attention_dot_f16(const uint16_t* x, const uint16_t* y, int64_t n) {
  const int64_t np = n / 32 * 32;
  float acc[4][8] = {};
  for (int64_t i = 0; i < np; i += 32)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 8; ++l)
        acc[j][l] = std::fma(fp16_to_fp32(x[i + j * 8 + l]), fp16_to_fp32(y[i + j * 8 + l]), acc[j][l]);
  float q[4];
  for (int l = 0; l < 4; ++l) {
    const float a = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
    const float b = (acc[0][l + 4] + acc[2][l + 4]) + (acc[1][l + 4] + acc[3][l + 4]);
    q[l] = a + b;
  }
  double sum = (q[0] + q[1]) + (q[2] + q[3]);
  for (int64_t i = np; i < n; ++i) sum += static_cast<double>(fp16_to_fp32(x[i]) * fp16_to_fp32(y[i]));
  return static_cast<float>(sum);
}

}  // namespace baton::kernels
