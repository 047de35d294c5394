// The tiled attention mode (llama.cpp's flash_attn_ext_tiled, used for micro-batches of >= 64
// rows): near a double-precision softmax(q·K)·V with f32 q, every ISA bitwise equal to the
// scalar reference, a query's result independent of the other queries and of the threads, and
// one_chunk when the head dim is not a multiple of 8 (as in llama.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/base/fp16.h"
#include "kernels/attention.h"

using namespace baton;
using namespace baton::kernels;

namespace {

struct Cache {
  std::vector<uint16_t> k, v;
};

Cache random_cache(int64_t n_pos, size_t stride, uint32_t seed, float k_scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Cache c;
  c.k.resize(static_cast<size_t>(n_pos) * stride);
  c.v.resize(c.k.size());
  for (auto& x : c.k) x = fp32_to_fp16(dist(rng) * k_scale);
  for (auto& x : c.v) x = fp32_to_fp16(dist(rng));
  return c;
}

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// softmax(scale · q·k16) · v16 in double (q in f32, as the tiled mode takes it), head h.
std::vector<double> reference(const AttentionShape& s, const float* q, const Cache& c, int64_t n_kv, int64_t h) {
  const int64_t kvh = h / (s.n_head / s.n_head_kv);
  std::vector<double> scores(static_cast<size_t>(n_kv));
  double max = -INFINITY;
  for (int64_t p = 0; p < n_kv; ++p) {
    double dot = 0;
    for (int64_t d = 0; d < s.head_dim; ++d)
      dot += double(q[h * s.head_dim + d]) * fp16_to_fp32(c.k[p * s.kv_stride + kvh * s.head_dim + d]);
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

std::vector<Isa> supported_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
    if (static_cast<int>(isa) <= static_cast<int>(detected_isa())) isas.push_back(isa);
  return isas;
}

}  // namespace

TEST_CASE("tiled attention is near a double-precision reference and bitwise equal on every ISA") {
  struct Case {
    int64_t n_head, n_head_kv, head_dim, n_kv;
    float q_scale;
  };
  const Case cases[] = {
      {8, 4, 8, 1, 1.0f},      // stories260K's shape, first position
      {8, 4, 8, 64, 1.0f},     // exactly one tile
      {8, 4, 32, 65, 2.0f},    // tl256's shape, one position into the second tile
      {4, 2, 64, 200, 1.0f},   // tq2's shape, partial last tile
      {8, 2, 64, 130, 3.0f},   // tq3's GQA ratio
      {4, 4, 128, 700, 4.0f},  // peaked softmax, many tiles
      {2, 1, 40, 90, 1.0f},    // head dim a multiple of 8, not of 32
  };
  for (const Case& tc : cases) {
    AttentionShape s{tc.n_head, tc.n_head_kv, tc.head_dim, static_cast<size_t>(tc.n_head_kv * tc.head_dim + 5),
                     1.0f / std::sqrt(static_cast<float>(tc.head_dim))};
    auto cache = random_cache(tc.n_kv, s.kv_stride, static_cast<uint32_t>(tc.head_dim * 7 + tc.n_kv));
    auto q = random_floats(static_cast<size_t>(tc.n_head * tc.head_dim), 17, tc.q_scale);
    std::vector<float> scalar_out, chunk_out(q.size());
    attention_one(s, AttentionQuery{q.data(), cache.k.data(), cache.v.data(), tc.n_kv, chunk_out.data()},
                  Isa::kScalar);
    for (Isa isa : supported_isas()) {
      INFO("isa " << isa_name(isa) << " n_head " << tc.n_head << "/" << tc.n_head_kv << " head_dim " << tc.head_dim
                  << " n_kv " << tc.n_kv);
      std::vector<float> out(q.size(), -7.0f);
      attention_one(s, AttentionQuery{q.data(), cache.k.data(), cache.v.data(), tc.n_kv, out.data(), true}, isa);
      double worst = 0;
      for (int64_t h = 0; h < tc.n_head; ++h) {
        auto expect = reference(s, q.data(), cache, tc.n_kv, h);
        for (int64_t d = 0; d < tc.head_dim; ++d)
          worst = std::max(worst, std::fabs(out[h * tc.head_dim + d] - expect[d]));
      }
      CHECK(worst < 1e-5);  // f32 accumulator and f32 q: far tighter than one_chunk's F16 sum
      if (isa == Isa::kScalar) {
        scalar_out = out;
        if (tc.n_kv > 1) CHECK(std::memcmp(out.data(), chunk_out.data(), out.size() * sizeof(float)) != 0);
      } else {
        CHECK(std::memcmp(out.data(), scalar_out.data(), out.size() * sizeof(float)) == 0);  // bitwise
      }
    }
  }
}

TEST_CASE("tiled attention of a query is bitwise the same alone, batched, and on any thread count") {
  AttentionShape s{8, 2, 64, 2 * 64, 0.125f};
  const int64_t n_seq_pos = 300;
  auto cache_a = random_cache(n_seq_pos, s.kv_stride, 41);
  auto cache_b = random_cache(n_seq_pos, s.kv_stride, 42);
  const int64_t n_queries = 9;
  auto q = random_floats(static_cast<size_t>(n_queries * 8 * 64), 43);
  std::vector<AttentionQuery> queries;
  std::vector<float> out(q.size());
  for (int64_t i = 0; i < n_queries; ++i) {
    const Cache& c = i % 2 ? cache_b : cache_a;  // two sequences, one in tiled mode
    queries.push_back({q.data() + i * 512, c.k.data(), c.v.data(), 1 + i * 33, out.data() + i * 512, i % 2 == 0});
  }
  for (Isa isa : supported_isas()) {
    INFO("isa " << isa_name(isa));
    ThreadPool pool1(1), pool2(2), pool3(3);
    attention(pool1, s, queries, isa);
    const std::vector<float> ref = out;
    for (ThreadPool* pool : {&pool2, &pool3}) {
      std::fill(out.begin(), out.end(), 0.0f);
      attention(*pool, s, queries, isa);
      CHECK(std::memcmp(out.data(), ref.data(), out.size() * sizeof(float)) == 0);
    }
    for (int64_t i : {int64_t{0}, int64_t{3}, int64_t{4}, n_queries - 1}) {
      std::vector<float> alone(512);
      AttentionQuery one = queries[i];
      one.out = alone.data();
      attention(pool3, s, std::span<const AttentionQuery>(&one, 1), isa);  // split into head slices
      CHECK(std::memcmp(alone.data(), ref.data() + i * 512, 512 * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("tiled attention falls back to one_chunk when the head dim is not a multiple of 8") {
  AttentionShape s{6, 1, 20, 20, 0.2f};
  const int64_t n_kv = 80;
  auto cache = random_cache(n_kv, s.kv_stride, 51);
  auto q = random_floats(6 * 20, 52);
  for (Isa isa : supported_isas()) {
    std::vector<float> tiled(q.size()), chunk(q.size());
    attention_one(s, AttentionQuery{q.data(), cache.k.data(), cache.v.data(), n_kv, tiled.data(), true}, isa);
    attention_one(s, AttentionQuery{q.data(), cache.k.data(), cache.v.data(), n_kv, chunk.data(), false}, isa);
    CHECK(std::memcmp(tiled.data(), chunk.data(), tiled.size() * sizeof(float)) == 0);
  }
}
