// How requests end: stop strings, end of generation, max_tokens, a full context, cancellation,
// a full queue, bad requests, a failing runner, and shutting down.
#include <catch2/catch.hpp>

#include <thread>

#include "scheduler_util.h"

using namespace baton;
using namespace baton::serving;
using namespace baton::serving::test;

namespace {

CompletionRequest greedy(const tokenizer::Tokenizer& tok, const std::string& text, int32_t max_tokens) {
  CompletionRequest r;
  r.prompt = tok.encode(text, true, false);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0.0f;
  r.ignore_eos = true;
  return r;
}

// The smallest number of generated tokens whose text contains `stop`.
size_t tokens_until(const tokenizer::Tokenizer& tok, const std::vector<int32_t>& tokens, const std::string& stop) {
  for (size_t n = 1; n <= tokens.size(); ++n)
    if (tok.decode(std::span<const int32_t>(tokens).first(n)).find(stop) != std::string::npos) return n;
  return 0;
}

}  // namespace

// After a failure the scheduler serves a new greedy request of n tokens exactly as a solo run.
void check_serves_like_solo(Scheduler& scheduler, LocalModel& model, int n) {
  auto request = greedy(model.tokenizer(), "Once upon a time", n);
  auto got = drain(*scheduler.submit(request));
  CHECK(got.summary.finish_reason == "length");
  auto ref = solo(model, request);
  REQUIRE(ref.steps.size() == got.events.size());
  for (size_t i = 0; i < ref.steps.size(); ++i) CHECK(ref.steps[i].token == got.events[i].token);
}

TEST_CASE("scheduler: stop strings end the completion before them") {
  auto model = load_stories(4);
  const auto& tok = model->tokenizer();
  Scheduler scheduler(model->head(), model->layers(), tok, {});
  auto base = greedy(tok, "Once upon a time", 60);
  const GenerationResult ref = solo(*model, base);
  std::vector<int32_t> tokens;
  for (const auto& s : ref.steps) tokens.push_back(s.token);
  const std::string text = tok.decode(tokens);
  REQUIRE(tokens.size() == 60);

  SECTION("a stop string spanning two tokens") {
    // the last two bytes of one piece and the first two of the next
    size_t i = 5;
    while (i + 1 < tokens.size() &&
           (tok.token_to_piece(tokens[i]).size() < 3 || tok.token_to_piece(tokens[i + 1]).size() < 3))
      ++i;
    REQUIRE(i + 1 < tokens.size());
    const std::string a = tok.token_to_piece(tokens[i]), b = tok.token_to_piece(tokens[i + 1]);
    const std::string stop = a.substr(a.size() - 2) + b.substr(0, 2);
    auto request = base;
    request.stop = {stop, "never appears \x01"};
    auto got = drain(*scheduler.submit(request));
    INFO("stop string '" << stop << "' in: " << text);
    CHECK(got.summary.finish_reason == "stop");
    CHECK(got.text() == text.substr(0, text.find(stop)));
    CHECK(got.summary.completion_tokens == tokens_until(tok, tokens, stop));
    CHECK(got.events.size() == got.summary.completion_tokens);
  }
  SECTION("a stop string whose beginning appears is held back, then released") {
    const std::string stop = text.substr(20, 6) + "\x01";
    auto request = base;
    request.stop = {stop};
    auto got = drain(*scheduler.submit(request));
    CHECK(got.summary.finish_reason == "length");
    CHECK(got.text() == text);
    CHECK(got.tokens() == tokens);
    bool held = false;
    for (const auto& e : got.events) held = held || e.text != tok.token_to_piece(e.token);
    CHECK(held);
  }
  SECTION("the earliest of several stop strings wins, text after it is dropped") {
    const std::string later = text.substr(40, 5), earlier = text.substr(15, 4);
    REQUIRE(text.find(earlier) < text.find(later));
    auto request = base;
    request.stop = {later, earlier};
    auto got = drain(*scheduler.submit(request));
    CHECK(got.summary.finish_reason == "stop");
    CHECK(got.text() == text.substr(0, text.find(earlier)));
  }
}

TEST_CASE("scheduler: end of generation, max_tokens, a full context") {
  SECTION("max_tokens") {
    auto model = load_stories(2);
    Scheduler scheduler(model->head(), model->layers(), model->tokenizer(), {});
    auto got = drain(*scheduler.submit(greedy(model->tokenizer(), "The dog", 7)));
    CHECK(got.summary.finish_reason == "length");
    CHECK(got.summary.completion_tokens == 7);
    auto zero = drain(*scheduler.submit(greedy(model->tokenizer(), "The dog", 0)));
    CHECK(zero.summary.finish_reason == "length");
    CHECK(zero.events.empty());
  }
  SECTION("a full context ends with length, as Generator") {
    auto model = load_stories(2, 32);
    Scheduler scheduler(model->head(), model->layers(), model->tokenizer(), {});
    auto request = greedy(model->tokenizer(), "Once upon a time", -1);
    auto got = drain(*scheduler.submit(request));
    CHECK(got.summary.finish_reason == "length");
    CHECK(got.summary.completion_tokens == 32 - request.prompt.size());
    auto ref = solo(*model, request);
    REQUIRE(ref.steps.size() == got.events.size());
    for (size_t i = 0; i < ref.steps.size(); ++i) CHECK(ref.steps[i].token == got.events[i].token);
  }
  SECTION("an end-of-generation token stops, and its text is not published") {
    // stories260K never samples its end token; the random-weight tl256 model (whose end-token
    // logit is exactly 0) does, at a very high temperature: seeds 4 and 10 end after 22 and 25.
    LocalModelOptions mo;
    mo.threads = 2;
    mo.n_ctx = 64;
    mo.max_sequences = 4;
    LocalModel model(baton::test::shared_path("models/synthetic/tl256-Q8_0.gguf"), mo);
    const auto& tok = model.tokenizer();
    auto request_for = [&](uint32_t seed, bool ignore_eos) {
      auto r = greedy(tok, "Once upon a time", -1);
      r.ignore_eos = ignore_eos;
      r.sampling.temperature = 50.0f;
      r.sampling.top_k = 0;
      r.sampling.top_p = 1.0f;
      r.sampling.min_p = 0.0f;
      r.sampling.seed = seed;
      return r;
    };
    Scheduler scheduler(model.head(), model.layers(), tok, {});
    auto a = scheduler.submit(request_for(4, false));
    auto b = scheduler.submit(request_for(10, false));
    auto c = scheduler.submit(request_for(4, true));
    // drain everything before the solo runs: they use the same layers
    Outcome outcomes[] = {drain(*a), drain(*b)};
    auto got = drain(*c);
    const size_t expected_lengths[] = {22, 25};
    int i = 0;
    for (const auto& out : outcomes) {
      const auto& got = out;
      const uint32_t seed = i == 0 ? 4 : 10;
      auto ref = solo(model, request_for(seed, false));
      CHECK(ref.finish_reason == "stop");
      CHECK(got.summary.finish_reason == "stop");
      REQUIRE(got.events.size() == expected_lengths[i++]);
      REQUIRE(ref.steps.size() == got.events.size());
      for (size_t k = 0; k < ref.steps.size(); ++k) CHECK(ref.steps[k].token == got.events[k].token);
      CHECK(tok.is_eog(got.events.back().token));
      CHECK(got.events.back().text.empty());
      auto tokens = got.tokens();
      tokens.pop_back();
      CHECK(got.text() == tok.decode(tokens));
    }
    // ignore_eos: the same end token is sampled and generation goes on to the full context
    CHECK(got.summary.finish_reason == "length");
    REQUIRE(got.events.size() == 64 - request_for(4, true).prompt.size());
    CHECK(tok.is_eog(got.events[21].token));
  }
}

TEST_CASE("scheduler: cancel frees the slot and the cache") {
  auto model = load_stories(2);
  ControlledLayers runner(model->layers());
  runner.set_delay(std::chrono::milliseconds(2));
  SchedulerOptions options;
  options.slots = 1;
  Scheduler scheduler(model->head(), runner, model->tokenizer(), options);

  SECTION("mid-generation") {
    auto handle = scheduler.submit(greedy(model->tokenizer(), "Once upon a time", -1));
    TokenEvent event;
    for (int i = 0; i < 3; ++i) REQUIRE(handle->next(event, std::chrono::seconds(20)) == RequestHandle::Poll::kToken);
    handle->cancel();
    handle->cancel();  // idempotent
    CHECK(handle->cancelled());
    auto got = drain(*handle);
    CHECK(got.summary.finish_reason == "cancelled");
    CHECK(got.summary.completion_tokens < 100);
    CHECK(model->layers().active_sequences() == 0);
    CHECK(scheduler.stats().active == 0);
  }
  SECTION("while queued") {
    runner.close();
    auto first = scheduler.submit(greedy(model->tokenizer(), "Once upon a time", 5));
    auto second = scheduler.submit(greedy(model->tokenizer(), "The cat", 5));
    second->cancel();
    runner.open();
    CHECK(drain(*first).summary.finish_reason == "length");
    auto got = drain(*second);
    CHECK(got.summary.finish_reason == "cancelled");
    CHECK(got.events.empty());
  }
  // the slot is free again
  auto after = drain(*scheduler.submit(greedy(model->tokenizer(), "The cat", 4)));
  CHECK(after.summary.finish_reason == "length");
  CHECK(model->layers().active_sequences() == 0);
}

TEST_CASE("scheduler: a full queue is refused with OverloadedError") {
  auto model = load_stories(2);
  ControlledLayers runner(model->layers());
  SchedulerOptions options;
  options.slots = 1;
  options.queue_limit = 1;
  Scheduler scheduler(model->head(), runner, model->tokenizer(), options);
  runner.close();  // the first pass waits: nothing can finish
  auto a = scheduler.submit(greedy(model->tokenizer(), "Once upon a time", 4));
  auto b = scheduler.submit(greedy(model->tokenizer(), "The cat", 4));
  try {
    scheduler.submit(greedy(model->tokenizer(), "The dog", 4));
    FAIL("a third request was accepted");
  } catch (const OverloadedError& e) {
    CHECK_THAT(e.what(), Catch::Contains("server overloaded") && Catch::Contains("(limits 1 slots, 1 queued)"));
  }
  CHECK(scheduler.stats().rejected == 1);
  runner.open();
  CHECK(drain(*a).summary.finish_reason == "length");
  CHECK(drain(*b).summary.finish_reason == "length");
  CHECK(scheduler.stats().requests == 2);
}

TEST_CASE("scheduler: bad requests are refused with a message") {
  auto model = load_stories(1, 64);
  Scheduler scheduler(model->head(), model->layers(), model->tokenizer(), {});
  const auto& tok = model->tokenizer();
  auto message_of = [&](CompletionRequest r) -> std::string {
    try {
      scheduler.submit(std::move(r));
    } catch (const OverloadedError&) {
      return "overloaded?";
    } catch (const Error& e) {
      return e.what();
    }
    return "accepted";
  };
  auto r = greedy(tok, "Once upon a time", 4);
  r.prompt.assign(100, r.prompt[1]);
  const std::string too_long = message_of(r);
  CHECK_THAT(too_long, Catch::Contains("100 tokens") && Catch::Contains("holds 64"));
  r.prompt.assign(64, r.prompt[1]);
  CHECK_THAT(message_of(r), Catch::Contains("64 tokens"));
  r.prompt.clear();
  CHECK_THAT(message_of(r), Catch::Contains("empty"));
  r = greedy(tok, "Once upon a time", 4);
  r.prompt[2] = tok.n_vocab();
  CHECK_THAT(message_of(r), Catch::Contains("outside the vocabulary"));
  r.prompt[2] = -1;
  CHECK_THAT(message_of(r), Catch::Contains("outside the vocabulary"));
  r = greedy(tok, "Once upon a time", 4);
  r.sampling.top_p = 1.5f;
  CHECK_THAT(message_of(r), Catch::Contains("top_p"));
  r = greedy(tok, "Once upon a time", 4);
  r.n_top_logprobs = 21;
  CHECK_THAT(message_of(r), Catch::Contains("n_top_logprobs") && Catch::Contains("20"));
  CHECK(scheduler.stats().requests == 0);
  CHECK(drain(*scheduler.submit(greedy(tok, "Once upon a time", 2))).summary.finish_reason == "length");
}

TEST_CASE("scheduler: a failing runner ends the running requests with its message, then serves again") {
  auto model = load_stories(2);
  ControlledLayers runner(model->layers());
  SchedulerOptions options;
  options.slots = 2;
  Scheduler scheduler(model->head(), runner, model->tokenizer(), options);
  const std::string message = "node 'w2' (10.0.0.2:7100) failed: connection reset by peer";
  runner.close();
  auto a = scheduler.submit(greedy(model->tokenizer(), "Once upon a time", 20));
  auto b = scheduler.submit(greedy(model->tokenizer(), "The cat sat", 20));
  runner.arm_failure(message);
  runner.open();
  for (auto* h : {a.get(), b.get()}) {
    auto got = drain(*h);
    CHECK(got.summary.finish_reason == "error");
    CHECK(got.summary.error == message);
    CHECK(got.summary.error_kind == ErrorKind::kFailed);  // the HTTP layer's 502, from the type
  }
  CHECK(scheduler.stats().failed == 2);
  CHECK(model->layers().active_sequences() == 0);
  runner.arm_failure("");
  check_serves_like_solo(scheduler, *model, 20);
}

TEST_CASE("scheduler: a pipelined runner failing in finish() ends every sequence in flight, then serves again") {
  auto model = load_stories(4);
  QueueingLayers runner(model->layers());
  runner.fail_finish_after = 6;
  SchedulerOptions options;
  options.slots = 4;
  Scheduler scheduler(model->head(), runner, model->tokenizer(), options);
  std::vector<std::shared_ptr<RequestHandle>> handles;
  runner.hold(true);  // every request is queued before the first pass can finish
  for (const char* text : {"Once upon a time", "The cat", "She ran", "A big dog"})
    handles.push_back(scheduler.submit(greedy(model->tokenizer(), text, 30)));
  runner.hold(false);
  for (auto& h : handles) {
    auto got = drain(*h);
    CHECK(got.summary.finish_reason == "error");
    CHECK(got.summary.error == "node 'w3' (10.0.0.3:7100): no answer for 30 s");
  }
  CHECK(scheduler.stats().failed == 4);
  CHECK(model->layers().active_sequences() == 0);
  runner.fail_finish_after = -1;
  check_serves_like_solo(scheduler, *model, 12);
}

TEST_CASE("scheduler: destroying it ends running and queued requests with an error") {
  auto model = load_stories(1);
  ControlledLayers runner(model->layers());
  runner.set_delay(std::chrono::milliseconds(2));
  SchedulerOptions options;
  options.slots = 1;
  std::shared_ptr<RequestHandle> running, queued;
  {
    Scheduler scheduler(model->head(), runner, model->tokenizer(), options);
    running = scheduler.submit(greedy(model->tokenizer(), "Once upon a time", -1));
    queued = scheduler.submit(greedy(model->tokenizer(), "The cat", -1));
    TokenEvent event;
    REQUIRE(running->next(event, std::chrono::seconds(20)) == RequestHandle::Poll::kToken);
  }
  for (auto* h : {running.get(), queued.get()}) {
    auto got = drain(*h);
    CHECK(got.summary.finish_reason == "error");
    CHECK(got.summary.error == "server shutting down");
    CHECK(got.summary.error_kind == ErrorKind::kShuttingDown);  // the HTTP layer's 503, never read from the text
  }
  CHECK(model->layers().active_sequences() == 0);
}
