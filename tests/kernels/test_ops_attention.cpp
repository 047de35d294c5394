// Attention: every ISA bitwise equal to the scalar reference and near a naive double-precision
// softmax(q·K)·V (with q and K rounded to F16 as the kernel does), GQA head mapping, long contexts, and bitwise
// invariance to the batch and the thread count.
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

TEST_CASE("attention is near a double-precision reference and bitwise equal on every ISA, head dim and GQA ratio") {
  struct Case {
    int64_t n_head, n_head_kv, head_dim, n_kv;
    float q_scale;
  };
  const Case cases[] = {
      {8, 4, 8, 1, 1.0f},      // stories260K's shape, first token
      {8, 4, 8, 77, 1.0f},     // chunk + tail
      {4, 4, 64, 200, 2.0f},   // no GQA
      {8, 2, 80, 130, 1.0f},   // head dim not a multiple of 16
      {6, 1, 20, 65, 3.0f},    // MQA, odd head dim
      {4, 2, 128, 513, 4.0f},  // peaked softmax
      {2, 1, 256, 64, 1.0f},
      {16, 4, 64, 150, 2.0f},  // heads 8 at a time (head_dim % 32 == 0), several KV heads per block
      {12, 3, 32, 40, 1.0f},   // one block of 8 heads, then 4 one by one
      {4, 2, 40, 33, 1.0f},    // 16 + 16 + 8 elements: every vector width of the elementwise steps
  };
  for (const Case& tc : cases) {
    AttentionShape s{tc.n_head, tc.n_head_kv, tc.head_dim, static_cast<size_t>(tc.n_head_kv * tc.head_dim + 3),
                     1.0f / std::sqrt(static_cast<float>(tc.head_dim))};
    auto cache = random_cache(tc.n_kv, s.kv_stride, static_cast<uint32_t>(tc.head_dim + tc.n_kv));
    auto q = random_floats(static_cast<size_t>(tc.n_head * tc.head_dim), 7, tc.q_scale);
    std::vector<float> scalar_out;
    for (Isa isa : baton::test::available_isas()) {
      INFO("isa " << isa_name(isa) << " n_head " << tc.n_head << "/" << tc.n_head_kv << " head_dim " << tc.head_dim
                  << " n_kv " << tc.n_kv);
      std::vector<float> out(q.size(), -7.0f);
      attention_one(s, AttentionQuery{q.data(), cache.k.data(), cache.v.data(), tc.n_kv, out.data()}, isa);
      double worst = 0;
      for (int64_t h = 0; h < tc.n_head; ++h) {
        auto expect = reference(s, q.data(), cache, tc.n_kv, h, QueryPrecision::kF16);
        for (int64_t d = 0; d < tc.head_dim; ++d)
          worst = std::max(worst, std::fabs(out[h * tc.head_dim + d] - expect[d]));
      }
      // The V accumulator is F16 (llama.cpp's one_chunk numerics): every position's update
      // rounds the unnormalised sum to 11 significant bits, errors of ~5e-4 after hundreds of
      // positions are expected; a wrong softmax or V row would be off by ~0.1.
      CHECK(worst < 2e-3);
      if (isa == Isa::kScalar) scalar_out = out;
      else CHECK(std::memcmp(out.data(), scalar_out.data(), out.size() * sizeof(float)) == 0);  // bitwise
    }
  }
}

TEST_CASE("attention stays accurate at long contexts and with large scores") {
  AttentionShape s{4, 1, 128, 128, 1.0f / std::sqrt(128.0f)};
  const int64_t n_kv = 4500;
  auto cache = random_cache(n_kv, s.kv_stride, 11, 3.0f);
  auto q = random_floats(4 * 128, 12, 6.0f);  // scores up to tens: max-subtraction matters
  std::vector<float> scalar_out;
  for (Isa isa : baton::test::available_isas()) {
    INFO("isa " << isa_name(isa));
    std::vector<float> out(q.size());
    attention_one(s, AttentionQuery{q.data(), cache.k.data(), cache.v.data(), n_kv, out.data()}, isa);
    double worst = 0;
    for (int64_t h = 0; h < 4; ++h) {
      auto expect = reference(s, q.data(), cache, n_kv, h, QueryPrecision::kF16);
      for (int64_t d = 0; d < 128; ++d) worst = std::max(worst, std::fabs(out[h * 128 + d] - expect[d]));
    }
    CHECK(worst < 5e-3);  // F16 accumulator over 4,500 positions (see above)
    if (isa == Isa::kScalar) scalar_out = out;
    else CHECK(std::memcmp(out.data(), scalar_out.data(), out.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("attention of a query is bitwise the same alone, batched, and on any thread count") {
  check_query_invariance(21, /*tiled_even=*/false, {0, 4, 8});
}

TEST_CASE("attention heads read their own GQA KV head") {
  // KV head j holds V = j + 1 everywhere: every output of head h is (h / group) + 1.
  AttentionShape s{6, 3, 16, 48, 0.25f};
  const int64_t n_kv = 10;
  auto cache = random_cache(n_kv, s.kv_stride, 31);
  for (int64_t p = 0; p < n_kv; ++p)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t d = 0; d < 16; ++d) cache.v[p * 48 + j * 16 + d] = fp32_to_fp16(static_cast<float>(j + 1));
  auto q = random_floats(6 * 16, 32);
  for (Isa isa : baton::test::available_isas()) {
    std::vector<float> out(q.size());
    attention_one(s, AttentionQuery{q.data(), cache.k.data(), cache.v.data(), n_kv, out.data()}, isa);
    for (int64_t h = 0; h < 6; ++h)
      for (int64_t d = 0; d < 16; ++d) CHECK(out[h * 16 + d] == Approx(h / 2 + 1).epsilon(2e-3));  // F16 accumulator
  }
}
