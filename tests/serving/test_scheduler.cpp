// The scheduler's results are bitwise those of Generator running each request alone, whatever
// runs beside it: one request, seeded sampling, six concurrent requests on four slots with a
// small token budget (chunked prefill interleaved with decoding), and a pipelined runner.
#include <catch2/catch.hpp>

#include <thread>

#include "scheduler_util.h"

using namespace baton;
using namespace baton::serving;
using namespace baton::serving::test;

namespace {

void check_equals_solo(LocalModel& model, const CompletionRequest& request, const Outcome& got, int n_batch = 512) {
  GenerationResult ref = solo(model, request, n_batch);
  INFO("prompt of " << request.prompt.size() << " tokens, max_tokens " << request.max_tokens << ", seed "
                    << request.sampling.seed << ", temperature " << request.sampling.temperature);
  REQUIRE(got.summary.finish_reason == ref.finish_reason);
  REQUIRE(got.events.size() == ref.steps.size());
  CHECK(got.summary.completion_tokens == ref.steps.size());
  CHECK(got.summary.prompt_tokens == request.prompt.size());
  std::vector<int32_t> ref_tokens;
  for (size_t i = 0; i < ref.steps.size(); ++i) {
    const auto& e = got.events[i];
    const auto& s = ref.steps[i];
    ref_tokens.push_back(s.token);
    REQUIRE(e.token == s.token);
    if (request.logprobs || request.n_top_logprobs > 0) CHECK(same_bits(e.logprob, s.logprob));
    if (request.n_top_logprobs > 0) {
      REQUIRE(e.top.size() == s.top.size());
      for (size_t j = 0; j < s.top.size(); ++j) {
        CHECK(e.top[j].id == s.top[j].id);
        CHECK(same_bits(e.top[j].logprob, s.top[j].logprob));
      }
    }
  }
  // The streamed text is the completion: the generated tokens' pieces without an end token.
  std::vector<int32_t> text_tokens = ref_tokens;
  if (!request.ignore_eos && !text_tokens.empty() && model.tokenizer().is_eog(text_tokens.back()))
    text_tokens.pop_back();
  CHECK(got.text() == model.tokenizer().decode(text_tokens));
}

CompletionRequest make_request(const tokenizer::Tokenizer& tok, const std::string& text, int32_t max_tokens,
                               float temperature, uint32_t seed) {
  CompletionRequest r;
  r.prompt = tok.encode(text, true, false);
  r.max_tokens = max_tokens;
  r.sampling.temperature = temperature;
  r.sampling.seed = seed;
  r.n_top_logprobs = 3;
  r.logprobs = true;
  return r;
}

// Six requests of different prompt lengths, lengths and sampling.
std::vector<CompletionRequest> six_requests(const tokenizer::Tokenizer& tok) {
  std::vector<CompletionRequest> rs;
  rs.push_back(make_request(tok, "Once upon a time", 40, 0.0f, 0));
  rs.push_back(make_request(tok,
                            "Lily and Ben went to the park with their mother. They saw a big red ball under a "
                            "tree and they wanted to play with it, but a dog came and",
                            24, 0.8f, 7));
  rs.push_back(make_request(tok, "The cat", 60, 1.0f, 12345));
  rs.push_back(make_request(tok, "One day, a little boy named Tom found a shiny stone in the garden.", 12, 0.0f, 0));
  rs.push_back(make_request(tok, "She", 33, 0.7f, 99));
  rs[4].sampling.repeat_penalty = 1.1f;
  rs[4].sampling.presence_penalty = 0.2f;
  rs[4].n_top_logprobs = 0;  // chosen logprob only
  rs.push_back(
      make_request(tok, "The sun was hot and the bird sang a song to the little flowers by the river", 50, 0.9f, 4242));
  rs[5].logprobs = false;
  rs[5].n_top_logprobs = 0;
  rs[5].ignore_eos = true;
  return rs;
}

void run_six(LocalModel& model, LayerRunner& runner, const SchedulerOptions& options) {
  auto requests = six_requests(model.tokenizer());
  std::vector<Outcome> outcomes(requests.size());
  {
    Scheduler scheduler(model.head(), runner, model.tokenizer(), options);
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (const auto& r : requests) handles.push_back(scheduler.submit(r));
    std::vector<std::thread> consumers;
    for (size_t i = 0; i < handles.size(); ++i) consumers.emplace_back([&, i] { outcomes[i] = drain(*handles[i]); });
    for (auto& t : consumers) t.join();
    auto stats = scheduler.stats();
    CHECK(stats.requests == requests.size());
    CHECK(stats.active == 0);
    CHECK(stats.queued == 0);
    CHECK(stats.failed == 0);
    uint64_t prompt_tokens = 0, generated = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      prompt_tokens += requests[i].prompt.size();
      generated += outcomes[i].summary.completion_tokens;
    }
    CHECK(stats.prompt_tokens == prompt_tokens);
    CHECK(stats.generated_tokens == generated);
    // Shared passes: far fewer than one per token of every request.
    CHECK(stats.forward_passes < generated);
  }
  CHECK(model.layers().active_sequences() == 0);
  for (size_t i = 0; i < requests.size(); ++i) check_equals_solo(model, requests[i], outcomes[i], options.n_batch);
}

}  // namespace

TEST_CASE("scheduler: one greedy request equals Generator bitwise") {
  auto model = load_stories(4);
  Scheduler scheduler(model->head(), model->layers(), model->tokenizer(), {});
  auto request = make_request(model->tokenizer(), "Once upon a time", 48, 0.0f, 0);
  request.n_top_logprobs = 5;
  auto got = drain(*scheduler.submit(request));
  CHECK(got.summary.finish_reason == "length");
  CHECK(got.summary.error.empty());
  CHECK(got.summary.time_to_first_token > 0);
  CHECK(got.summary.queue_seconds <= got.summary.time_to_first_token);
  check_equals_solo(*model, request, got);
}

TEST_CASE("scheduler: seeded sampling equals Generator bitwise") {
  auto model = load_stories(4);
  Scheduler scheduler(model->head(), model->layers(), model->tokenizer(), {});
  for (uint32_t seed : {1u, 2u, 31337u}) {
    auto request = make_request(model->tokenizer(), "Once upon a time", 40, 0.8f, seed);
    auto got = drain(*scheduler.submit(request));
    check_equals_solo(*model, request, got);
  }
}

TEST_CASE("scheduler: six concurrent requests on four slots, chunked prefill, each equals its solo run") {
  auto model = load_stories(4);
  SchedulerOptions options;
  options.slots = 4;
  options.n_batch = 8;
  run_six(*model, model->layers(), options);
}

TEST_CASE("scheduler: a runner with three passes in flight gives the same results") {
  auto model = load_stories(4);
  QueueingLayers runner(model->layers());
  SchedulerOptions options;
  options.slots = 4;
  options.n_batch = 8;
  run_six(*model, runner, options);
  CHECK(runner.max_queued == 3);
}

TEST_CASE("scheduler: many slots and a large budget give the same results") {
  auto model = load_stories(8);
  SchedulerOptions options;
  options.slots = 8;
  options.n_batch = 512;
  run_six(*model, model->layers(), options);
}
