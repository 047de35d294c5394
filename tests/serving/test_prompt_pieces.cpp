// Pipelined prefill and prefix reuse: a prompt sent as pieces with several passes in flight,
// or continued from another request's cached KV, gives bitwise the result of whole chunks
// computed from scratch (engine/runtime/prompt_pieces.h).
#include <catch2/catch.hpp>

#include <numeric>
#include <random>

#include "engine/runtime/prompt_pieces.h"
#include "scheduler_util.h"

namespace baton::serving::test {
namespace {

// Random token ids of the model's vocabulary, after a BOS.
std::vector<int32_t> random_prompt(const LocalModel& model, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(3, static_cast<int32_t>(model.config().n_vocab - 1));
  std::vector<int32_t> p(n);
  for (auto& t : p) t = d(rng);
  return p;
}

GenerationResult generate(LocalModel& model, LayerRunner& runner, std::span<const int32_t> prompt, int n_batch,
                          int prefill_chunk) {
  GenerateOptions options;
  options.n_batch = n_batch;
  options.prefill_chunk = prefill_chunk;
  options.n_predict = 6;
  options.sampling.temperature = 0;
  options.n_top_logprobs = 3;
  Generator generator(model.head(), runner);
  return generator.generate(7, prompt, options);
}

void check_same(const GenerationResult& got, const GenerationResult& ref) {
  REQUIRE(got.steps.size() == ref.steps.size());
  for (size_t i = 0; i < ref.steps.size(); ++i) {
    CHECK(got.steps[i].token == ref.steps[i].token);
    CHECK(same_bits(got.steps[i].logprob, ref.steps[i].logprob));
    REQUIRE(got.steps[i].top.size() == ref.steps[i].top.size());
    for (size_t j = 0; j < ref.steps[i].top.size(); ++j)
      CHECK(same_bits(got.steps[i].top[j].logprob, ref.steps[i].top[j].logprob));
  }
}

}  // namespace

TEST_CASE("prompt pieces: never cross a chunk and hold at most the piece size, and hints are the chunk's") {
  for (size_t n_batch : {1, 7, 64, 100, 128, 512})
    for (size_t chunk : {0, 1, 5, 32, 64, 100, 4096})
      for (size_t n_prompt = 1; n_prompt <= 700; ++n_prompt) {
        size_t fed = 0;
        while (fed < n_prompt) {
          const size_t piece = next_prompt_piece(n_prompt, fed, n_batch, chunk);
          const size_t begin = fed / n_batch * n_batch, m = std::min(n_batch, n_prompt - begin);
          REQUIRE(piece >= 1);
          REQUIRE(fed + piece <= begin + m);  // inside the chunk
          if (chunk > 0) CHECK(piece <= chunk);
          if (chunk == 0) CHECK(piece == begin + m - fed);
          fed += piece;
        }
      }
  // The hints follow kernels::row_orders and the tiled threshold over a whole chunk.
  std::vector<uint64_t> ids(100, 7);
  std::vector<kernels::RowOrder> orders;
  for (size_t m : {1, 2, 5, 63, 64, 67, 100}) {
    kernels::row_orders(std::span<const uint64_t>(ids.data(), m), orders);
    for (size_t j = 0; j < m; ++j) {
      const RowHint h = prompt_row_hint(300 + m, 300 + j, 300);
      CHECK(h.order == orders[j]);
      CHECK(h.tiled == (m >= 64));
      CHECK(RowHint::decode(h.encode()) == h);
    }
  }
  CHECK_THROWS_AS(RowHint::decode(3), Error);
  CHECK_THROWS_AS(RowHint::decode(8), Error);
}

TEST_CASE("prompt pieces: the automatic piece is 128 per stages within 8 to 32, smaller for a short prompt") {
  CHECK(auto_prompt_piece(512, 1, 128) == 512);  // one runner: whole chunks
  CHECK(auto_prompt_piece(64, 1) == 64);
  CHECK(auto_prompt_piece(512, 2) == 32);  // a long prompt
  CHECK(auto_prompt_piece(512, 2, 2048) == 32);
  CHECK(auto_prompt_piece(512, 2, 512) == 32);
  CHECK(auto_prompt_piece(512, 2, 256) == 32);
  CHECK(auto_prompt_piece(512, 2, 200) == 24);  // about 4 pieces per stage, a multiple of 4
  CHECK(auto_prompt_piece(512, 2, 128) == 16);
  CHECK(auto_prompt_piece(512, 2, 40) == 8);  // never below 8
  CHECK(auto_prompt_piece(512, 2, 1) == 8);
  CHECK(auto_prompt_piece(512, 4, 128) == 8);
  CHECK(auto_prompt_piece(512, 16, 4096) == 8);
  CHECK(auto_prompt_piece(512, 39, 100000) == 8);
}

TEST_CASE("prompt pieces: reuse starts within both prompts' grouped, tiled rows") {
  CHECK(reusable_prefix(1000, 512) == 512 + 488);
  CHECK(reusable_prefix(1001, 512) == 512 + 488);
  CHECK(reusable_prefix(550, 512) == 512);  // a 38-row tail is not tiled
  CHECK(reusable_prefix(30, 512) == 0);
  CHECK(reusable_prefix(1000, 102) == 100);  // a chunk of 102 rows ends in 2 batch-order rows
  for (size_t n_batch : {64, 100, 128, 512})
    for (size_t n_prompt = 1; n_prompt <= 1100; n_prompt += 7)
      for (size_t shared = 0; shared <= n_prompt; shared += 13) {
        const size_t start = prefix_reuse_start(n_prompt, shared, n_batch);
        REQUIRE(start <= shared);
        REQUIRE(start < n_prompt);
        for (size_t p = 0; p < start; p += 5) {
          const RowHint h = prompt_row_hint(n_prompt, p, n_batch);
          CHECK(h.order == kernels::RowOrder::kGrouped);
          CHECK(h.tiled);
        }
      }
}

TEST_CASE("prompt pieces: pieces with three passes in flight give bitwise the whole chunks' result") {
  for (const char* file : {"models/synthetic/tl256-Q4_K_M.gguf", "models/stories260K.gguf"}) {
    auto model = load_model(file, 1, 1024);
    for (int n_batch : {128, 512})
      for (size_t n : {1, 5, 63, 64, 65, 66, 67, 129, 131, 190, 257, 300, 700}) {
        INFO(file << " n_batch " << n_batch << " prompt " << n);
        auto prompt = random_prompt(*model, n, static_cast<uint32_t>(n));
        auto ref = generate(*model, model->layers(), prompt, n_batch, n_batch);
        QueueingLayers pipelined(model->layers());
        for (int chunk : {1, 5, 32, 64, 100}) check_same(generate(*model, pipelined, prompt, n_batch, chunk), ref);
        if (n >= 2) CHECK(pipelined.max_queued >= 2);  // pieces were in flight together
      }
  }
}

TEST_CASE("scheduler: a long prompt is pipelined in pieces and equals its solo run bitwise") {
  auto model = load_model("models/synthetic/tl256-Q4_K_M.gguf", 4, 1024);
  QueueingLayers runner(model->layers());
  SchedulerOptions options;
  options.slots = 4;
  options.n_batch = 256;
  std::vector<CompletionRequest> requests;
  for (size_t n : {300, 90, 7}) {
    CompletionRequest r;
    r.prompt = random_prompt(*model, n, static_cast<uint32_t>(n) + 1);
    r.max_tokens = 8;
    r.sampling.temperature = n == 90 ? 0.8f : 0.0f;
    r.sampling.seed = 5;
    r.logprobs = true;
    r.n_top_logprobs = 2;
    requests.push_back(std::move(r));
  }
  std::vector<Outcome> outcomes;
  {
    Scheduler scheduler(model->head(), runner, model->tokenizer(), options);
    runner.hold(true);
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (const auto& r : requests) handles.push_back(scheduler.submit(r));
    runner.hold(false);
    for (auto& h : handles) outcomes.push_back(drain(*h));
  }
  CHECK(runner.max_queued == 3);  // the long prompt's pieces filled the chain
  for (size_t i = 0; i < requests.size(); ++i) {
    GenerationResult ref = solo(*model, requests[i], options.n_batch);
    REQUIRE(outcomes[i].events.size() == ref.steps.size());
    for (size_t k = 0; k < ref.steps.size(); ++k) {
      CHECK(outcomes[i].events[k].token == ref.steps[k].token);
      CHECK(same_bits(outcomes[i].events[k].logprob, ref.steps[k].logprob));
    }
  }
}

namespace {

// Request `prompt` (greedy, logprobs) and wait for it.
Outcome complete(Scheduler& scheduler, const std::vector<int32_t>& prompt, int max_tokens, bool cache = true) {
  CompletionRequest r;
  r.prompt = prompt;
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0.7f;
  r.sampling.seed = 11;
  r.logprobs = true;
  r.n_top_logprobs = 2;
  r.cache_prompt = cache;
  return drain(*scheduler.submit(std::move(r)));
}

void check_equals_from_scratch(LocalModel& model, const std::vector<int32_t>& prompt, const Outcome& got, int n_batch) {
  CompletionRequest r;
  r.prompt = prompt;
  r.max_tokens = static_cast<int32_t>(got.events.size());
  r.sampling.temperature = 0.7f;
  r.sampling.seed = 11;
  r.n_top_logprobs = 2;
  GenerationResult ref = solo(model, r, n_batch);
  REQUIRE(got.events.size() == ref.steps.size());
  for (size_t k = 0; k < ref.steps.size(); ++k) {
    CHECK(got.events[k].token == ref.steps[k].token);
    CHECK(same_bits(got.events[k].logprob, ref.steps[k].logprob));
    REQUIRE(got.events[k].top.size() == ref.steps[k].top.size());
    for (size_t j = 0; j < ref.steps[k].top.size(); ++j)
      CHECK(same_bits(got.events[k].top[j].logprob, ref.steps[k].top[j].logprob));
  }
}

}  // namespace

TEST_CASE("prefix cache: a chat's next turn reuses the KV of the last and equals the turn computed from scratch") {
  auto model = load_model("models/synthetic/tl256-Q4_K_M.gguf", 2, 1024);
  for (bool pipelined : {false, true}) {
    INFO((pipelined ? "three passes in flight" : "one process"));
    QueueingLayers queueing(model->layers());
    LayerRunner& runner = pipelined ? static_cast<LayerRunner&>(queueing) : model->layers();
    SchedulerOptions options;
    options.slots = 2;
    options.n_batch = 128;
    Scheduler scheduler(model->head(), runner, model->tokenizer(), options);
    std::vector<int32_t> history = random_prompt(*model, 150, 1);
    size_t turns_reused = 0, previous_prompt = 0;
    for (int turn = 0; turn < 4; ++turn) {
      auto got = complete(scheduler, history, 10);
      check_equals_from_scratch(*model, history, got, options.n_batch);
      const size_t expected =
          turn == 0 ? 0 : prefix_reuse_start(history.size(), reusable_prefix(previous_prompt, 128), 128);
      CHECK(got.summary.cached_tokens == expected);
      previous_prompt = history.size();
      if (got.summary.cached_tokens > 0) ++turns_reused;
      for (const auto& e : got.events) history.push_back(e.token);
      auto more = random_prompt(*model, 40, 100 + turn);  // the next user message
      history.insert(history.end(), more.begin(), more.end());
    }
    CHECK(turns_reused == 3);
    auto stats = scheduler.stats();
    CHECK(stats.cache_hits == 3);
    CHECK(stats.cache_entries == 1);
    CHECK(stats.cached_prompt_tokens > 3 * 150);
  }
  CHECK(model->layers().active_sequences() == 0);
}

TEST_CASE("prefix cache: cache_prompt false, a full set of slots and a lost runner each compute from scratch") {
  auto model = load_model("models/synthetic/tl256-Q4_K_M.gguf", 2, 1024);  // one slot for the solo runs
  SchedulerOptions options;
  options.slots = 1;
  options.n_batch = 128;
  Scheduler scheduler(model->head(), model->layers(), model->tokenizer(), options);
  auto a = random_prompt(*model, 200, 3), b = random_prompt(*model, 120, 4);
  CHECK(complete(scheduler, a, 4).summary.cached_tokens == 0);
  CHECK(model->layers().active_sequences() == 1);  // a's KV stays for reuse
  auto again = complete(scheduler, a, 4, false);   // asks not to reuse
  CHECK(again.summary.cached_tokens == 0);
  check_equals_from_scratch(*model, a, again, 128);
  CHECK(complete(scheduler, a, 4).summary.cached_tokens == 0);  // a's entry made room for again's, which was not kept
  const auto hit = complete(scheduler, a, 4);
  CHECK(hit.summary.cached_tokens == 199);  // all of a but its last token, whose logits are needed
  check_equals_from_scratch(*model, a, hit, 128);
  SECTION("the only slot goes to another prompt: the entry is evicted") {
    CHECK(complete(scheduler, b, 4).summary.cached_tokens == 0);
    auto got = complete(scheduler, a, 4);
    CHECK(got.summary.cached_tokens == 0);
    check_equals_from_scratch(*model, a, got, 128);
  }
  SECTION("the runner lost its caches") {
    CHECK(scheduler.run_exclusive([] { return true; }));
    CHECK(scheduler.stats().cache_entries == 0);
    CHECK(model->layers().active_sequences() == 0);
    auto got = complete(scheduler, a, 4);
    CHECK(got.summary.cached_tokens == 0);
    check_equals_from_scratch(*model, a, got, 128);
  }
}

}  // namespace baton::serving::test
