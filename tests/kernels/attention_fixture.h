// Shared by the attention tests (one_chunk and tiled modes): random F16 KV caches and queries,
// a double-precision reference, and the check that a query's result is
// bitwise the same alone, batched with others and on any thread count.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "engine/base/fp16.h"
#include "kernels/attention/attention.h"
#include "kernels/core/isa.h"
#include "kernels/core/thread_pool.h"
#include "kernels/legacy_test_util.h"

namespace baton::kernels::test {

struct Cache {
  std::vector<uint16_t> k, v;
};

inline Cache random_cache(int64_t n_pos, size_t stride, uint32_t seed, float k_scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Cache c;
  c.k.resize(static_cast<size_t>(n_pos) * stride);
  c.v.resize(c.k.size());
  for (auto& x : c.k) x = fp32_to_fp16(dist(rng) * k_scale);
  for (auto& x : c.v) x = fp32_to_fp16(dist(rng));
  return c;
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// How the kernel under test takes q: rounded to F16 (one_chunk) or as f32 (tiled).
enum class QueryPrecision { kF16, kF32 };

// softmax(scale · q·k16) · v16 in double for head h, q rounded as the kernel rounds it.
inline std::vector<double> reference(const AttentionShape& s, const float* q, const Cache& c, int64_t n_kv, int64_t h,
                                     QueryPrecision qp) {
  const int64_t kvh = h / (s.n_head / s.n_head_kv);
  std::vector<double> scores(static_cast<size_t>(n_kv));
  double max = -INFINITY;
  for (int64_t p = 0; p < n_kv; ++p) {
    double dot = 0;
    for (int64_t d = 0; d < s.head_dim; ++d) {
      const float qd = q[h * s.head_dim + d];
      const double qv = qp == QueryPrecision::kF16 ? double(fp16_to_fp32(fp32_to_fp16(qd))) : double(qd);
      dot += qv * fp16_to_fp32(c.k[p * s.kv_stride + kvh * s.head_dim + d]);
    }
    scores[p] = dot * s.scale;
    max = std::max(max, scores[p]);
  }
  double sum = 0;
  for (auto& x : scores) sum += (x = std::exp(x - max));
  std::vector<double> out(static_cast<size_t>(s.head_dim), 0.0);
  for (int64_t p = 0; p < n_kv; ++p)
    for (int64_t d = 0; d < s.head_dim; ++d)
      out[d] += scores[p] / sum * fp16_to_fp32(c.v[p * s.kv_stride + kvh * s.head_dim + d]);
  return out;
}

// Nine queries (8 heads / 2 KV heads of 64) over two 300-position sequences with causal
// lengths 1, 34, 67 ...; every other query in tiled mode when `tiled_even` says so. Checks, per
// ISA, that 2 and 3 threads give the 1-thread bits and that queries `alone` computed on their
// own give the bits they had in the batch.
inline void check_query_invariance(uint32_t seed, bool tiled_even, std::initializer_list<int64_t> alone) {
  AttentionShape s{8, 2, 64, 2 * 64, 0.125f};
  const int64_t n_seq_pos = 300;
  auto cache_a = random_cache(n_seq_pos, s.kv_stride, seed);
  auto cache_b = random_cache(n_seq_pos, s.kv_stride, seed + 1);
  const int64_t n_queries = 9;
  auto q = random_floats(static_cast<size_t>(n_queries * 8 * 64), seed + 2);
  std::vector<AttentionQuery> queries;
  std::vector<float> out(q.size());
  for (int64_t i = 0; i < n_queries; ++i) {
    const Cache& c = i % 2 ? cache_b : cache_a;
    queries.push_back(
        {q.data() + i * 512, c.k.data(), c.v.data(), 1 + i * 33, out.data() + i * 512, tiled_even && i % 2 == 0});
  }
  for (Isa isa : baton::test::available_isas()) {
    INFO("isa " << isa_name(isa));
    ThreadPool pool1(1), pool2(2), pool3(3);
    attention(pool1, s, queries, isa);
    const std::vector<float> ref = out;
    for (ThreadPool* pool : {&pool2, &pool3}) {
      std::fill(out.begin(), out.end(), 0.0f);
      attention(*pool, s, queries, isa);
      CHECK(std::memcmp(out.data(), ref.data(), out.size() * sizeof(float)) == 0);
    }
    for (int64_t i : alone) {
      INFO("query " << i);
      std::vector<float> single(512);
      AttentionQuery one = queries[static_cast<size_t>(i)];
      one.out = single.data();
      attention(pool3, s, std::span<const AttentionQuery>(&one, 1), isa);  // split into head slices
      CHECK(std::memcmp(single.data(), ref.data() + i * 512, 512 * sizeof(float)) == 0);
    }
  }
}

}  // namespace baton::kernels::test
