// The tiled attention mode (llama.cpp's flash_attn_ext_tiled, used for micro-batches of >= 64
// rows): near a double-precision softmax(q·K)·V with f32 q, every ISA bitwise equal to the
// scalar reference, a query's result independent of the other queries and of the threads, and
// one_chunk when the head dim is not a multiple of 8 (as in llama.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "engine/base/fp16.h"
#include "kernels/attention/attention.h"
#include "kernels/attention_fixture.h"

using namespace baton;
using namespace baton::kernels;

using namespace baton::kernels::test;

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
      {2, 1, 104, 84, 1.0f},   // 64 + 32 + 8 head dims; a last tile of 20 positions (16 + 8 lanes)
  };
  for (const Case& tc : cases) {
    AttentionShape s{tc.n_head, tc.n_head_kv, tc.head_dim, static_cast<size_t>(tc.n_head_kv * tc.head_dim + 5),
                     1.0f / std::sqrt(static_cast<float>(tc.head_dim))};
    auto cache = random_cache(tc.n_kv, s.kv_stride, static_cast<uint32_t>(tc.head_dim * 7 + tc.n_kv));
    auto q = random_floats(static_cast<size_t>(tc.n_head * tc.head_dim), 17, tc.q_scale);
    std::vector<float> scalar_out, chunk_out(q.size());
    attention_one(s, AttentionQuery{q.data(), cache.k.data(), cache.v.data(), tc.n_kv, chunk_out.data()}, Isa::kScalar);
    for (Isa isa : baton::test::available_isas()) {
      INFO("isa " << isa_name(isa) << " n_head " << tc.n_head << "/" << tc.n_head_kv << " head_dim " << tc.head_dim
                  << " n_kv " << tc.n_kv);
      std::vector<float> out(q.size(), -7.0f);
      attention_one(s, AttentionQuery{q.data(), cache.k.data(), cache.v.data(), tc.n_kv, out.data(), true}, isa);
      double worst = 0;
      for (int64_t h = 0; h < tc.n_head; ++h) {
        auto expect = reference(s, q.data(), cache, tc.n_kv, h, QueryPrecision::kF32);
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
  check_query_invariance(41, /*tiled_even=*/true, {0, 3, 4, 8});
}

TEST_CASE("tiled attention falls back to one_chunk when the head dim is not a multiple of 8") {
  AttentionShape s{6, 1, 20, 20, 0.2f};
  const int64_t n_kv = 80;
  auto cache = random_cache(n_kv, s.kv_stride, 51);
  auto q = random_floats(6 * 20, 52);
  for (Isa isa : baton::test::available_isas()) {
    std::vector<float> tiled(q.size()), chunk(q.size());
    attention_one(s, AttentionQuery{q.data(), cache.k.data(), cache.v.data(), n_kv, tiled.data(), true}, isa);
    attention_one(s, AttentionQuery{q.data(), cache.k.data(), cache.v.data(), n_kv, chunk.data(), false}, isa);
    CHECK(std::memcmp(tiled.data(), chunk.data(), tiled.size() * sizeof(float)) == 0);
  }
}
