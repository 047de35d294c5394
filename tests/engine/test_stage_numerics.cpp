// Batch invariance of the llama.cpp-emulating numerics (docs/NUMERICS.md): a sequence's logits
// depend on how many rows its own sequence has in a pass (single-row vs batch matmul order,
// tiled attention from 64 rows) but are bitwise the same whatever other sequences share the
// pass, on any thread count and any layer split; the last layer's FFN runs on output rows only.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "engine/runtime/local_model.h"
#include "fixtures.h"

using namespace baton;
using namespace baton::test;

namespace {

struct Tok {
  uint64_t seq;
  int32_t pos;
  int32_t id;
  bool out;
};

// Runs one pass; returns the logits of the output rows in batch order.
std::vector<float> pass(LocalModel& m, const std::vector<Tok>& toks) {
  TokenBatch batch;
  std::vector<int32_t> ids;
  for (const auto& t : toks) {
    batch.add(t.seq, t.pos, t.out);
    ids.push_back(t.id);
  }
  const int64_t n_embd = m.config().n_embd;
  std::vector<float> hidden(toks.size() * static_cast<size_t>(n_embd)), out_rows;
  m.head().embed(ids, hidden.data());
  m.layers().forward(batch, hidden, out_rows);
  const int64_t n_out = static_cast<int64_t>(batch.n_outputs());
  std::vector<float> logits(static_cast<size_t>(n_out * m.head().n_vocab()));
  m.head().logits(out_rows.data(), n_out, logits.data());
  return logits;
}

std::vector<Tok> prompt(uint64_t seq, int32_t n, int32_t pos0, uint32_t salt) {
  std::vector<Tok> t;
  for (int32_t i = 0; i < n; ++i)
    t.push_back({seq, pos0 + i, static_cast<int32_t>(3 + (i * 37 + salt) % 250), i + 1 == n});
  return t;
}

bool same(const float* a, const float* b, int64_t n) { return std::memcmp(a, b, static_cast<size_t>(n) * 4) == 0; }

}  // namespace

TEST_CASE("a sequence's logits are bitwise the same alone and batched with other sequences") {
  for (const char* model : {"models/synthetic/tl256-F16.gguf", "models/stories260K.gguf"}) {
    INFO(model);
    LocalModelOptions alone_opt;
    alone_opt.threads = 1;
    alone_opt.n_ctx = 256;
    alone_opt.max_sequences = 3;
    LocalModel alone(shared_path(model), alone_opt);
    LocalModelOptions mixed_opt = alone_opt;
    mixed_opt.threads = 2;
    mixed_opt.layer_ranges = {{0, 2}, {2, alone.config().n_layer}};
    LocalModel mixed(shared_path(model), mixed_opt);
    const int64_t nv = alone.head().n_vocab();

    // 70-row prompt (batch order, tiled attention), then a 1-row decode (single-row order)
    auto a_prompt = prompt(1, 70, 0, 1);
    const auto ref_prompt = pass(alone, a_prompt);
    const auto ref_decode = pass(alone, {{1, 70, 42, true}});

    // the same with another sequence's 5 rows before it and 3 rows interleaved after
    std::vector<Tok> batch = prompt(2, 5, 0, 7);
    batch[4].out = true;
    for (const auto& t : a_prompt) batch.push_back(t);
    auto logits = pass(mixed, batch);  // outputs: seq 2's last row, then seq 1's
    REQUIRE(logits.size() == static_cast<size_t>(2 * nv));
    CHECK(same(logits.data() + nv, ref_prompt.data(), nv));
    std::vector<Tok> step = {{2, 5, 9, false}, {1, 70, 42, true}, {2, 6, 10, false}, {2, 7, 11, true}};
    logits = pass(mixed, step);
    REQUIRE(logits.size() == static_cast<size_t>(2 * nv));
    CHECK(same(logits.data(), ref_decode.data(), nv));

    // a different chunking of the same sequence changes the orders (the rule is per pass)
    alone.layers().reset_sequence(1);
    auto first = prompt(1, 69, 0, 1);
    first.back().out = false;
    pass(alone, first);
    const auto last_alone = pass(alone, {a_prompt.back()});
    CHECK_FALSE(same(last_alone.data(), ref_prompt.data(), nv));
  }
}

TEST_CASE("weights kept in the file mapping (--mmap) give the bits of the resident, repacked copy") {
  // Q4_0 and Q5_K are repacked at load on AVX2/AVX-512, Q4_K on AVX-512 (16-row groups); the K-quant
  // mixes have Q6_K rows too.
  for (const char* model : {"models/synthetic/tl256-Q4_0.gguf", "models/synthetic/tl256-Q4_K_M.gguf",
                            "models/synthetic/tl256-Q5_K_M.gguf"}) {
    INFO(model);
    LocalModelOptions opt;
    opt.threads = 2;
    opt.n_ctx = 256;
    opt.max_sequences = 2;
    LocalModel resident(shared_path(model), opt);
    opt.placement = WeightPlacement::kMapped;
    LocalModel mapped(shared_path(model), opt);
    const int64_t nv = resident.head().n_vocab();
    // 9-row prompt (4-row grouped + batch orders), two single-row decode steps, then a pass with
    // a second sequence's 6-row prompt next to the first's decode row (decode rows of a batch)
    std::vector<std::vector<Tok>> passes = {prompt(1, 9, 0, 3), {{1, 9, 42, true}}, {{1, 10, 7, true}}};
    passes.push_back(prompt(2, 6, 0, 5));
    passes.back().insert(passes.back().begin(), Tok{1, 11, 19, true});
    for (const auto& p : passes) {
      const auto a = pass(resident, p), b = pass(mapped, p);
      REQUIRE(!a.empty());
      REQUIRE(a.size() % static_cast<size_t>(nv) == 0);  // the logits of every output row
      REQUIRE(b.size() == a.size());
      CHECK(same(a.data(), b.data(), static_cast<int64_t>(a.size())));
    }
  }
}
