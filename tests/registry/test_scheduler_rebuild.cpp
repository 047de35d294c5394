// The scheduler's hook for a repairable runner (what a dynamic cluster uses to survive a lost
// node): a failed pass -> repair -> every active sequence rebuilt from its tokens on fresh
// caches, with output identical to an undisturbed run; a failed repair ends them with its
// message; run_exclusive() swaps the runner between steps (replace_runner); run_when_idle() takes
// only the moments with no pass in flight; set_unavailable() refuses requests.
// In-process (stories260K, two LocalModels = two sets of caches): fast.
#include <catch2/catch.hpp>

#include <atomic>
#include <future>

#include "serving/scheduler_util.h"

namespace {

using namespace baton;
using namespace baton::serving;
using namespace baton::serving::test;
using namespace std::chrono_literals;

CompletionRequest greedy(const LocalModel& m, const std::string& prompt, int32_t max_tokens) {
  CompletionRequest r;
  r.prompt = m.tokenizer().encode(prompt, true, true);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  r.ignore_eos = true;
  r.logprobs = true;
  return r;
}

std::vector<int32_t> solo_tokens(LocalModel& m, const CompletionRequest& r) {
  std::vector<int32_t> out;
  for (const auto& s : solo(m, r).steps) out.push_back(s.token);
  return out;
}

// Bitwise: tokens and log-probabilities of an undisturbed solo run with the same prompt chunks
// (the rebuild replays the prompt in the same chunks and each generated token alone).
void check_bitwise_solo(LocalModel& ref, const CompletionRequest& r, const Outcome& got, int n_batch) {
  const GenerationResult want = solo(ref, r, n_batch);
  REQUIRE(got.events.size() == want.steps.size());
  for (size_t i = 0; i < want.steps.size(); ++i) {
    INFO("step " << i);
    REQUIRE(got.events[i].token == want.steps[i].token);
    CHECK(same_bits(got.events[i].logprob, want.steps[i].logprob));
  }
}

}  // namespace

TEST_CASE("scheduler rebuild: a pass lost mid-generation is repaired, the sequences continue bitwise unchanged",
          "[registry]") {
  // F32 (stories260K) and a K-quant model, whose row orders depend on the rows per pass.
  const std::string path =
      GENERATE(std::string("models/stories260K.gguf"), std::string("models/synthetic/tl256-Q4_K_M.gguf"));
  INFO(path);
  auto a = load_model(path, 2), b = load_model(path, 2), ref = load_model(path, 1);
  QueueingLayers first(a->layers()), second(b->layers());
  first.fail_finish_after = 7;  // a few passes into the decode
  SchedulerOptions so;
  so.slots = 2;
  so.n_batch = 4;  // prompts in chunks: the rebuild re-feeds in several passes too
  Scheduler sched(a->head(), first, a->tokenizer(), so);
  std::atomic<int> repairs{0};
  std::string seen_error;
  sched.set_runner_repair([&](const std::string& error) {
    seen_error = error;
    ++repairs;
    sched.replace_runner(second);  // fresh caches: nothing of the sequences is there
    return true;
  });
  const auto r1 = greedy(*a, "Once upon a time", 24);
  const auto r2 = greedy(*a, "The little dog", 20);
  auto h1 = sched.submit(r1);
  auto h2 = sched.submit(r2);
  const Outcome o1 = drain(*h1), o2 = drain(*h2);
  CHECK(repairs == 1);
  CHECK(seen_error.find("w3") != std::string::npos);
  CHECK(o1.summary.finish_reason == "length");
  CHECK(o2.summary.finish_reason == "length");
  check_bitwise_solo(*ref, r1, o1, so.n_batch);
  check_bitwise_solo(*ref, r2, o2, so.n_batch);
  CHECK(sched.stats().resumed == 2);
  CHECK(sched.stats().failed == 0);
}

TEST_CASE("scheduler rebuild: a repair that fails ends the sequences with its message, unavailable refuses requests",
          "[registry]") {
  auto a = load_stories(1);
  QueueingLayers first(a->layers());
  first.fail_finish_after = 3;
  Scheduler sched(a->head(), first, a->tokenizer(), SchedulerOptions{});
  sched.set_runner_repair([&](const std::string& error) -> bool {
    sched.set_unavailable("the cluster cannot serve: node w2 is offline");
    fail("{}; re-planning over the 1 usable online node(s) failed: 1.5 MiB missing", error);
  });
  auto h = sched.submit(greedy(*a, "Once upon a time", 16));
  const Outcome o = drain(*h);
  CHECK(o.summary.finish_reason == "error");
  CHECK(o.summary.error.find("w3") != std::string::npos);
  CHECK(o.summary.error.find("missing") != std::string::npos);
  CHECK_THROWS_AS(sched.submit(greedy(*a, "Once", 4)), UnavailableError);
  CHECK_THROWS_AS(sched.submit(greedy(*a, "Once", 4)), OverloadedError);  // the HTTP layer's 503
  CHECK_THROWS_WITH(sched.submit(greedy(*a, "Once", 4)), Catch::Contains("node w2"));
  sched.set_unavailable("");
  CHECK_NOTHROW(sched.submit(greedy(*a, "Once", 1)));
}

TEST_CASE("scheduler rebuild: a repair that declines (not a lost node) ends the sequences with the error",
          "[registry]") {
  auto a = load_stories(1);
  QueueingLayers first(a->layers());
  first.fail_finish_after = 2;
  Scheduler sched(a->head(), first, a->tokenizer(), SchedulerOptions{});
  sched.set_runner_repair([](const std::string&) { return false; });
  const Outcome o = drain(*sched.submit(greedy(*a, "Once upon a time", 16)));
  CHECK(o.summary.finish_reason == "error");
  CHECK(o.summary.error.find("no answer for 30 s") != std::string::npos);
  CHECK(sched.stats().resumed == 0);
}

TEST_CASE("scheduler rebuild: run_exclusive swaps the runner between steps, a running request continues unchanged",
          "[registry]") {
  auto a = load_stories(1), b = load_stories(1), ref = load_stories(1);
  ControlledLayers first(a->layers());
  ControlledLayers second(b->layers());
  first.set_delay(3ms);  // slow enough that the swap lands mid-generation
  Scheduler sched(a->head(), first, a->tokenizer(), SchedulerOptions{});
  const auto r = greedy(*a, "Once upon a time", 60);
  auto h = sched.submit(r);
  TokenEvent ev;
  REQUIRE(h->next(ev, 10000ms) == RequestHandle::Poll::kToken);  // generating
  bool ran_on_scheduler_thread = false;
  CHECK(sched.run_exclusive([&] {
    ran_on_scheduler_thread = true;
    sched.replace_runner(second);
    return true;
  }));
  CHECK(ran_on_scheduler_thread);
  Outcome rest = drain(*h);
  rest.events.insert(rest.events.begin(), ev);
  CHECK(rest.summary.finish_reason == "length");
  CHECK(rest.tokens() == solo_tokens(*ref, r));
  CHECK(sched.stats().resumed == 1);
  CHECK(second.passes > 0);
  // Idle: runs at once; false = nothing to rebuild; an exception comes back to the caller.
  CHECK(!sched.run_exclusive([] { return false; }));
  CHECK_THROWS_WITH(sched.run_exclusive([]() -> bool { throw baton::Error("load failed"); }), "load failed");
}

TEST_CASE(
    "scheduler idle: run_when_idle runs between passes on the scheduler thread, and gives up while a pass stays in the "
    "runner",
    "[registry]") {
  auto a = load_stories(1);
  ControlledLayers layers(a->layers());
  Scheduler sched(a->head(), layers, a->tokenizer(), SchedulerOptions{});
  const auto caller = std::this_thread::get_id();
  std::thread::id ran_on;
  // Idle: runs at once, on the scheduler's thread.
  CHECK(sched.run_when_idle([&] { ran_on = std::this_thread::get_id(); }, 2000ms));
  CHECK(ran_on != std::thread::id{});
  CHECK(ran_on != caller);
  // A pass held inside the runner: no idle moment comes, fn is not run.
  layers.close();
  auto h = sched.submit(greedy(*a, "Once upon a time", 8));
  while (layers.entered.load() == 0) std::this_thread::sleep_for(1ms);  // the scheduler is inside forward()
  bool ran = false;
  CHECK(!sched.run_when_idle([&] { ran = true; }, 100ms));
  CHECK(!ran);
  // Released: the request ends normally and the next idle moment serves the task.
  std::future<bool> later =
      std::async(std::launch::async, [&] { return sched.run_when_idle([&] { ran = true; }, 10000ms); });
  layers.open();
  CHECK(later.get());
  CHECK(ran);
  CHECK(drain(*h).summary.finish_reason == "length");
  CHECK_THROWS_WITH(sched.run_when_idle([] { throw baton::Error("stats failed"); }, 2000ms), "stats failed");
}

TEST_CASE("scheduler idle: replace_runner is refused outside the scheduler thread", "[registry]") {
  auto a = load_stories(1), b = load_stories(1);
  ControlledLayers first(a->layers()), second(b->layers());
  Scheduler sched(a->head(), first, a->tokenizer(), SchedulerOptions{});
  CHECK_THROWS_WITH(sched.replace_runner(second), Catch::Contains("outside the scheduler thread"));
  // Inside the idle mechanism it is allowed, and the next request runs on the new runner only.
  CHECK(!sched.run_exclusive([&] {
    sched.replace_runner(second);
    return false;
  }));
  auto h = sched.submit(greedy(*a, "Once upon a time", 4));
  CHECK(drain(*h).summary.finish_reason == "length");
  CHECK(first.passes == 0);
  CHECK(second.passes > 0);
}
