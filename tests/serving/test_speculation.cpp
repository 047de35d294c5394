// Speculative decoding by n-gram lookup (engine/runtime/speculation.h): drafts are found where
// they should be, their length adapts, and the output with speculation is bitwise the output
// without it, greedy and seeded sampling, in Generator and in the scheduler, alone and among
// other sequences, with passes in flight.
#include <catch2/catch.hpp>

#include <random>

#include "engine/runtime/draft_model.h"
#include "engine/runtime/speculation.h"
#include "scheduler_util.h"

namespace baton::serving::test {
namespace {

// Always drafting (not adapting to this machine's timing): every test sees verification passes.
const SpecParams kNgram{.mode = SpecMode::kNgram, .adapt = false};

// Text that repeats, as an edit of a quoted passage does: the continuation is in the prompt.
std::vector<int32_t> repeating_prompt(const LocalModel& model) {
  const std::string story =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
      "friends. One day, she saw a big red ball under a tree. ";
  return model.tokenizer().encode(story + story + story.substr(0, 40), true, false);
}

std::vector<int32_t> random_tokens(const LocalModel& model, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(3, static_cast<int32_t>(model.config().n_vocab - 1));
  std::vector<int32_t> p(n);
  for (auto& t : p) t = d(rng);
  return p;
}

GenerationResult run_generator(LocalModel& model, std::span<const int32_t> prompt, float temperature,
                               const SpecParams& spec, int n_predict = 48) {
  GenerateOptions options;
  options.n_predict = n_predict;
  options.sampling.temperature = temperature;
  options.sampling.seed = 11;
  options.n_top_logprobs = 3;
  options.speculation = spec;
  Generator generator(model.head(), model.layers());
  return generator.generate(3, prompt, options);
}

void check_same_steps(const GenerationResult& got, const GenerationResult& ref) {
  REQUIRE(got.steps.size() == ref.steps.size());
  for (size_t i = 0; i < ref.steps.size(); ++i) {
    INFO("step " << i);
    CHECK(got.steps[i].token == ref.steps[i].token);
    CHECK(same_bits(got.steps[i].logprob, ref.steps[i].logprob));
    REQUIRE(got.steps[i].top.size() == ref.steps[i].top.size());
    for (size_t j = 0; j < ref.steps[i].top.size(); ++j) {
      CHECK(got.steps[i].top[j].id == ref.steps[i].top[j].id);
      CHECK(same_bits(got.steps[i].top[j].logprob, ref.steps[i].top[j].logprob));
    }
  }
  CHECK(got.finish_reason == ref.finish_reason);
}

void check_same_events(const Outcome& got, const Outcome& ref) {
  REQUIRE(got.events.size() == ref.events.size());
  for (size_t i = 0; i < ref.events.size(); ++i) {
    INFO("event " << i);
    CHECK(got.events[i].token == ref.events[i].token);
    CHECK(got.events[i].text == ref.events[i].text);
    CHECK(same_bits(got.events[i].logprob, ref.events[i].logprob));
    REQUIRE(got.events[i].top.size() == ref.events[i].top.size());
    for (size_t j = 0; j < ref.events[i].top.size(); ++j)
      CHECK(same_bits(got.events[i].top[j].logprob, ref.events[i].top[j].logprob));
  }
  CHECK(got.summary.finish_reason == ref.summary.finish_reason);
  CHECK(got.summary.completion_tokens == ref.summary.completion_tokens);
}

// Runs `requests` at once through a scheduler over `runner` and returns their outcomes.
std::vector<Outcome> run_scheduler(LocalModel& model, LayerRunner& runner,
                                   const std::vector<CompletionRequest>& requests, const SpecParams& spec,
                                   SchedulerStats* stats = nullptr, int spec_max_decoders = 4) {
  SchedulerOptions options;
  options.spec_max_decoders = spec_max_decoders;
  options.slots = static_cast<int>(requests.size());
  options.speculation = spec;
  Scheduler scheduler(model.head(), runner, model.tokenizer(), options);
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (const auto& r : requests) handles.push_back(scheduler.submit(r));
  std::vector<Outcome> out;
  for (auto& h : handles) out.push_back(drain(*h));
  if (stats) *stats = scheduler.stats();
  return out;
}

}  // namespace

TEST_CASE("n-gram draft: the continuation of the latest earlier occurrence of the longest suffix") {
  const std::vector<int32_t> h = {1, 2, 3, 9, 9, 1, 2, 3, 7, 8, 5, 1, 2, 3};
  // The suffix 1 2 3 occurred twice before; the latest (position 5) is followed by 7 8 5 1 2 3.
  CHECK(ngram_draft(h, kNgram, 4) == std::vector<int32_t>{7, 8, 5, 1});
  CHECK(ngram_draft(h, kNgram, 100) == std::vector<int32_t>{7, 8, 5, 1, 2, 3});
  CHECK(ngram_draft(h, kNgram, 0).empty());
  // Only the last token repeats: no draft with ngram_min 2, one with ngram_min 1.
  const std::vector<int32_t> once = {4, 6, 4};
  CHECK(ngram_draft(once, kNgram, 4).empty());
  SpecParams one = kNgram;
  one.ngram_min = 1;
  CHECK(ngram_draft(once, one, 4) == std::vector<int32_t>{6, 4});
  // A longer suffix wins over a more recent shorter one.
  const std::vector<int32_t> longer = {5, 6, 7, 1, 9, 6, 7, 2, 5, 6, 7};
  CHECK(ngram_draft(longer, kNgram, 1) == std::vector<int32_t>{1});
  CHECK(ngram_draft(std::vector<int32_t>{}, kNgram, 4).empty());
}

TEST_CASE("draft policy: long drafts when rows are cheap and drafts kept, none but rare trials when they are not") {
  // A 70B-like stage: a row adds 2 % to a trip; every draft is kept whole.
  DraftPolicy cheap(16);
  cheap.record(1, 0, 0.100);
  for (int i = 0; i < 20; ++i) {
    const size_t k = cheap.limit();
    REQUIRE(k >= 1);
    cheap.record(1 + k, k, 0.100 + 0.002 * static_cast<double>(k));
  }
  CHECK(cheap.limit() == 16);
  CHECK(cheap.acceptance() > 0.95);
  CHECK(cheap.row_seconds() == Approx(0.002).epsilon(0.01));

  // A tiny model: a row costs as much as the trip, half the draft tokens are kept.
  DraftPolicy dear(16);
  dear.record(1, 0, 0.001);
  for (int i = 0; i < 30; ++i) {
    const size_t k = dear.limit();
    if (k == 0) {
      dear.record(1, 0, 0.001);
      continue;
    }
    dear.record(1 + k, k / 2, 0.001 * static_cast<double>(1 + k));
  }
  CHECK(dear.row_seconds() == Approx(0.001).epsilon(0.01));
  // Past the trial pauses no draft beats a plain trip: at most one trial draft in the next 10.
  size_t trials = 0;
  for (int i = 0; i < 10; ++i) {
    const size_t k = dear.limit();
    CHECK(k <= 1);
    if (k == 1) ++trials, dear.record(2, 0, 0.002);
    else dear.record(1, 0, 0.001);
  }
  CHECK(trials <= 1);

  // Text with no repetition: drafts fail, drafting stops paying and trials get rarer (the pause
  // doubles up to 128 tokens); what the failed rows cost stays within 3 % of plain decoding.
  for (double row_cost : {0.001, 0.010}) {
    INFO("a row costs " << row_cost << " s, a plain trip 0.010 s");
    DraftPolicy fresh(16);
    fresh.record(1, 0, 0.010);
    std::vector<int> gaps;
    int since = 0;
    double seconds = 0.010;
    const int tokens = 400;
    for (int i = 1; i < tokens; ++i) {
      const size_t k = fresh.limit();
      const double trip = 0.010 + row_cost * static_cast<double>(k);
      seconds += trip;
      if (k > 0) {
        gaps.push_back(since);
        since = 0;
      } else {
        ++since;
      }
      fresh.record(1 + k, 0, trip);
    }
    CHECK(seconds / (0.010 * tokens) <= 1.03);
    REQUIRE(gaps.size() >= 3);
    CHECK(gaps.back() >= 64);
    for (size_t i = 1; i + 1 < gaps.size(); ++i) CHECK(gaps[i + 1] >= gaps[i]);
  }
  // Shared passes: a draft row slows every decoder in the pass, so a draft that pays for a stream
  // alone (a row costs 10 % of a trip, a third of the draft tokens kept) is not sent among four.
  DraftPolicy shared(16);
  shared.record(1, 0, 0.010);
  for (int i = 0; i < 40; ++i) shared.record(4, i % 2, 0.013);
  CHECK(shared.acceptance() < 0.45);
  CHECK(shared.limit(1) > 0);
  CHECK(shared.limit(4) == 0);
  DraftPolicy off(0);
  CHECK(off.limit() == 0);

  SpecParams bad = kNgram;
  bad.draft_min = 20;
  CHECK_THROWS_AS(bad.validate(), Error);
  CHECK_THROWS_AS(parse_spec_mode("eagle"), Error);
  CHECK(parse_spec_mode("none") == SpecMode::kOff);
}

TEST_CASE(
    "speculation: Generator with n-gram drafts gives bitwise the tokens and logprobs without, greedy and sampled") {
  for (const char* file : {"models/stories260K.gguf", "models/synthetic/tl256-Q4_K_M.gguf"}) {
    auto model = load_model(file, 1, 512);
    for (float temperature : {0.0f, 0.9f}) {
      INFO(file << " temperature " << temperature);
      const auto prompt = repeating_prompt(*model);
      const auto ref = run_generator(*model, prompt, temperature, SpecParams{.mode = SpecMode::kOff});
      const auto got = run_generator(*model, prompt, temperature, kNgram);
      check_same_steps(got, ref);
      CHECK(ref.speculation.drafted == 0);
      CHECK(ref.decode_passes == ref.steps.size() - 1);
      if (temperature == 0.0f && std::string(file).find("stories") != std::string::npos) {
        // The trained model continues the quoted story: drafts are kept and passes saved.
        CHECK(got.speculation.accepted > 0);
        CHECK(got.decode_passes < got.steps.size() - 1);
      }
      // Every pass yields one token more than the drafts it kept.
      CHECK(got.decode_passes + got.speculation.accepted == got.steps.size() - 1);
    }
  }
}

TEST_CASE("speculation: the scheduler's output equals its output without speculation, alone, together and pipelined") {
  for (const char* file : {"models/stories260K.gguf", "models/synthetic/tl256-Q4_K_M.gguf"}) {
    auto model = load_model(file, 4, 512);
    std::vector<CompletionRequest> requests;
    for (int i = 0; i < 4; ++i) {
      CompletionRequest r;
      r.prompt = i == 3 ? random_tokens(*model, 40, 9) : repeating_prompt(*model);
      r.max_tokens = i == 1 ? 13 : 40;  // a length limit inside a draft
      r.sampling.temperature = i == 2 ? 0.8f : 0.0f;
      r.sampling.seed = 21;
      r.logprobs = true;
      r.n_top_logprobs = 2;
      if (i == 1) r.stop = {"park"};  // a stop string inside a kept draft
      requests.push_back(std::move(r));
    }
    const SpecParams off{.mode = SpecMode::kOff};
    SchedulerStats stats;
    const auto ref = run_scheduler(*model, model->layers(), requests, off, &stats);
    CHECK(stats.speculation.drafted == 0);
    for (int pipelined = 0; pipelined < 2; ++pipelined) {
      INFO(file << (pipelined ? " pipelined (3 in flight)" : " local"));
      QueueingLayers queueing(model->layers());
      LayerRunner& runner = pipelined ? static_cast<LayerRunner&>(queueing) : model->layers();
      const auto got = run_scheduler(*model, runner, requests, kNgram, &stats);
      for (size_t i = 0; i < requests.size(); ++i) {
        INFO("request " << i);
        check_same_events(got[i], ref[i]);
      }
      if (std::string(file).find("stories") != std::string::npos) {
        CHECK(got[0].summary.speculation.accepted > 0);
        CHECK(stats.speculation.accepted > 0);
      }
      // Alone (request 0 with 3 others at most in its pass: 4 decoders <= spec_max_decoders).
      const auto alone = run_scheduler(*model, runner, {requests[0]}, kNgram);
      check_same_events(alone[0], ref[0]);
    }
  }
}

TEST_CASE("speculation: a request's n_max 0 and a crowded pass send no drafts, the output is unchanged") {
  auto model = load_stories(2, 512);
  CompletionRequest r;
  r.prompt = repeating_prompt(*model);
  r.max_tokens = 30;
  r.sampling.temperature = 0;
  const auto ref = run_scheduler(*model, model->layers(), {r}, SpecParams{.mode = SpecMode::kOff});
  CompletionRequest none = r;
  none.draft_max = 0;
  SchedulerStats stats;
  auto got = run_scheduler(*model, model->layers(), {none}, kNgram, &stats);
  check_same_events(got[0], ref[0]);
  CHECK(stats.speculation.drafted == 0);
  // More decoders in a pass than spec_max_decoders (here 0): no drafts either.
  got = run_scheduler(*model, model->layers(), {r}, kNgram, &stats, 0);
  check_same_events(got[0], ref[0]);
  CHECK(stats.speculation.drafted == 0);
  got = run_scheduler(*model, model->layers(), {r}, kNgram, &stats, 1);
  check_same_events(got[0], ref[0]);
  CHECK(stats.speculation.drafted > 0);  // the test can fail: the same request alone drafts
  CompletionRequest bad = r;
  bad.draft_max = 2;
  bad.draft_min = 5;
  SchedulerOptions options;
  Scheduler scheduler(model->head(), model->layers(), model->tokenizer(), options);
  CHECK_THROWS_AS(scheduler.submit(bad), Error);
}

}  // namespace baton::serving::test

namespace baton::serving::test {

TEST_CASE("speculation: drafts from a draft model give bitwise the output without") {
  auto model = load_stories(3, 512);
  LocalModelOptions dlo;
  dlo.threads = 2;
  dlo.n_ctx = 512;
  dlo.max_sequences = 3;
  // The same weights as the target (the fixtures hold no smaller model of this vocabulary that
  // loads: the Q8_0 copy has 172-wide rows); its drafts run in catch-up chunks, not one token per
  // pass, so its numerics differ from the target's and a draft token is now and then rejected.
  DraftModel draft(baton::test::shared_path("models/stories260K.gguf"), dlo, model->tokenizer());
  const SpecParams by_draft{.mode = SpecMode::kDraft, .draft_max = 6, .adapt = false};
  for (float temperature : {0.0f, 0.9f}) {
    INFO("temperature " << temperature);
    const auto prompt = repeating_prompt(*model);
    const auto ref = run_generator(*model, prompt, temperature, SpecParams{.mode = SpecMode::kOff});
    GenerateOptions options;
    options.n_predict = 48;
    options.sampling.temperature = temperature;
    options.sampling.seed = 11;
    options.n_top_logprobs = 3;
    options.speculation = by_draft;
    options.draft_model = &draft;
    Generator generator(model->head(), model->layers());
    const auto got = generator.generate(3, prompt, options);
    check_same_steps(got, ref);
    if (temperature == 0.0f) {
      // The same weights agree with the target on most greedy tokens.
      CHECK(got.speculation.accepted * 2 > got.speculation.drafted);
      CHECK(got.decode_passes * 2 < got.steps.size());
    }
  }
  // The scheduler, three requests at once.
  std::vector<CompletionRequest> requests;
  for (int i = 0; i < 3; ++i) {
    CompletionRequest r;
    r.prompt = i == 2 ? random_tokens(*model, 30, 4) : repeating_prompt(*model);
    r.max_tokens = 30;
    r.sampling.temperature = i == 1 ? 0.7f : 0.0f;
    r.sampling.seed = 8;
    r.logprobs = true;
    r.n_top_logprobs = 2;
    requests.push_back(std::move(r));
  }
  const auto ref = run_scheduler(*model, model->layers(), requests, SpecParams{.mode = SpecMode::kOff});
  SchedulerOptions options;
  options.slots = 3;
  options.speculation = by_draft;
  options.draft_model = &draft;
  SchedulerStats stats;
  {
    Scheduler scheduler(model->head(), model->layers(), model->tokenizer(), options);
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (const auto& r : requests) handles.push_back(scheduler.submit(r));
    for (size_t i = 0; i < handles.size(); ++i) {
      INFO("request " << i);
      check_same_events(drain(*handles[i]), ref[i]);
    }
    stats = scheduler.stats();
  }
  CHECK(stats.speculation.accepted > 0);
  // A draft of another vocabulary is refused, naming the difference.
  CHECK_THROWS_WITH(DraftModel(baton::test::shared_path("models/llama-2-tiny-random.gguf"), dlo, model->tokenizer()),
                    Catch::Contains("vocabulary"));
  SchedulerOptions missing;
  missing.speculation = by_draft;
  CHECK_THROWS_WITH(Scheduler(model->head(), model->layers(), model->tokenizer(), missing),
                    Catch::Contains("--model-draft"));
}

}  // namespace baton::serving::test
