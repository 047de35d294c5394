// Speculative decoding through real engine-worker processes: a generated token and its n-gram
// draft go down the chain as one pass of single-row numerics, and the kept rows give bitwise
// the tokens and log-probabilities of one process decoding one token per pass.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>

#include "cluster_helpers.h"
#include "engine/pipeline/cluster.h"
#include "engine/runtime/local_model.h"
#include "engine/serving/scheduler.h"

namespace {

using namespace baton;

bool spec_same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::vector<int32_t> quoting_prompt(const tokenizer::Tokenizer& tok) {
  const std::string story =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
      "friends. One day, she saw a big red ball under a tree. ";
  return tok.encode(story + story + story.substr(0, 40), true, false);
}

std::unique_ptr<pipeline::Cluster> spec_cluster(const std::string& path, int64_t n_layer,
                                                const std::vector<std::unique_ptr<test::WorkerProcess>>& w) {
  std::vector<test::ClusterNode> nodes;
  const int64_t n = static_cast<int64_t>(w.size());
  for (int64_t i = 0; i < n; ++i) nodes.push_back({w[i].get(), i * n_layer / n, (i + 1) * n_layer / n - 1});
  pipeline::ClusterOptions co;
  co.threads = 1;
  co.n_ctx = 512;
  co.max_sequences = 3;
  return std::make_unique<pipeline::Cluster>(test::config_of(test::cluster_yaml(path, nodes, "insecure: true")), co);
}

std::vector<serving::TokenEvent> drain_events(serving::RequestHandle& handle, serving::CompletionSummary& summary) {
  std::vector<serving::TokenEvent> events;
  for (;;) {
    serving::TokenEvent e;
    const auto poll = handle.next(e, std::chrono::seconds(30));
    REQUIRE(poll != serving::RequestHandle::Poll::kTimeout);
    if (poll == serving::RequestHandle::Poll::kDone) break;
    events.push_back(e);
  }
  summary = handle.summary();
  return events;
}

}  // namespace

TEST_CASE("speculative decoding on 2 and 3 real workers is bitwise one process without speculation", "[pipeline]") {
  const std::string path = test::shared_path("models/stories260K.gguf");
  LocalModelOptions lo;
  lo.threads = 1;
  lo.n_ctx = 512;
  lo.max_sequences = 3;
  LocalModel local(path, lo);
  const auto prompt = quoting_prompt(local.tokenizer());

  // One process, one token per pass: the reference, greedy and sampled.
  std::vector<GenerationResult> want;
  for (float temperature : {0.0f, 0.9f}) {
    GenerateOptions go = test::greedy_options(40, 3);
    go.sampling.temperature = temperature;
    go.sampling.seed = 4;
    Generator g(local.head(), local.layers());
    want.push_back(g.generate(1, prompt, go));
  }
  for (int stages : {2, 3}) {
    auto w = test::spawn_workers(path, stages);
    auto cluster = spec_cluster(path, local.config().n_layer, w);
    for (size_t t = 0; t < want.size(); ++t) {
      INFO(stages << " stages, " << (t == 0 ? "greedy" : "sampled"));
      GenerateOptions go = test::greedy_options(40, 3);
      go.sampling.temperature = t == 0 ? 0.0f : 0.9f;
      go.sampling.seed = 4;
      go.speculation = SpecParams{.mode = SpecMode::kNgram, .adapt = false};
      Generator g(cluster->head(), cluster->layers());
      const auto got = g.generate(1, prompt, go);
      REQUIRE(got.steps.size() == want[t].steps.size());
      for (size_t i = 0; i < got.steps.size(); ++i) {
        INFO("step " << i);
        CHECK(got.steps[i].token == want[t].steps[i].token);
        CHECK(spec_same_bits(got.steps[i].logprob, want[t].steps[i].logprob));
        REQUIRE(got.steps[i].top.size() == want[t].steps[i].top.size());
        for (size_t j = 0; j < got.steps[i].top.size(); ++j)
          CHECK(spec_same_bits(got.steps[i].top[j].logprob, want[t].steps[i].top[j].logprob));
      }
      if (t == 0) {
        CHECK(got.speculation.accepted > 0);  // drafts were kept: fewer trips than tokens
        CHECK(got.decode_passes < got.steps.size() - 1);
      }
    }

    // The server's scheduler on the chain: three requests at once, speculation on.
    serving::SchedulerOptions so;
    so.slots = 3;
    so.speculation.adapt = false;
    serving::Scheduler scheduler(cluster->head(), cluster->layers(), cluster->tokenizer(), so);
    std::vector<std::shared_ptr<serving::RequestHandle>> handles;
    for (int i = 0; i < 3; ++i) {
      serving::CompletionRequest r;
      r.prompt = prompt;
      r.max_tokens = 40;
      r.sampling.temperature = i == 1 ? 0.9f : 0.0f;
      r.sampling.seed = 4;
      r.logprobs = true;
      r.n_top_logprobs = 3;
      r.ignore_eos = true;  // as the reference
      handles.push_back(scheduler.submit(r));
    }
    for (int i = 0; i < 3; ++i) {
      INFO(stages << " stages, scheduler request " << i);
      serving::CompletionSummary summary;
      const auto events = drain_events(*handles[static_cast<size_t>(i)], summary);
      const auto& ref = want[i == 1 ? 1 : 0];
      REQUIRE(events.size() == ref.steps.size());
      for (size_t k = 0; k < events.size(); ++k) {
        CHECK(events[k].token == ref.steps[k].token);
        CHECK(spec_same_bits(events[k].logprob, ref.steps[k].logprob));
      }
    }
    CHECK(scheduler.stats().speculation.accepted > 0);
  }
}
