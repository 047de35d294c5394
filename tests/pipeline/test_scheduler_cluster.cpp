// serving::Scheduler over a real 2-worker cluster (several micro-batches in flight, sequences
// joining and leaving): every request's tokens and log-probabilities are bitwise those of the
// same scheduler over one process.
#include <catch2/catch.hpp>

#include <chrono>

#include "cluster_helpers.h"
#include "engine/pipeline/cluster.h"
#include "engine/runtime/local_model.h"
#include "engine/serving/scheduler.h"

namespace {

struct Result {
  std::vector<baton::serving::TokenEvent> events;
  baton::serving::CompletionSummary summary;
};

// Four requests at once: different prompts and lengths, greedy and seeded sampling.
std::vector<Result> serve(baton::ModelHead& head, baton::LayerRunner& layers, const baton::tokenizer::Tokenizer& tok) {
  baton::serving::SchedulerOptions so;
  so.slots = 4;
  so.n_batch = 16;  // prompts arrive in chunks, mixed with other sequences' decode tokens
  baton::serving::Scheduler scheduler(head, layers, tok, so);
  const char* prompts[] = {"Once upon a time", "The little dog ran to the park and saw a big red ball", "Lily and Tom",
                           "One day, a girl named Sue found a box. In the box"};
  std::vector<std::shared_ptr<baton::serving::RequestHandle>> handles;
  for (int i = 0; i < 4; ++i) {
    baton::serving::CompletionRequest r;
    r.prompt = tok.encode(prompts[i], true, true);
    r.max_tokens = 10 + 4 * i;
    r.sampling.temperature = i % 2 == 0 ? 0.0f : 0.8f;
    r.sampling.seed = 100 + static_cast<uint32_t>(i);
    r.logprobs = true;
    r.n_top_logprobs = 3;
    r.ignore_eos = true;
    handles.push_back(scheduler.submit(std::move(r)));
  }
  std::vector<Result> out(handles.size());
  for (size_t i = 0; i < handles.size(); ++i) {
    baton::serving::TokenEvent e;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < end) {
      const auto p = handles[i]->next(e, std::chrono::milliseconds(200));
      if (p == baton::serving::RequestHandle::Poll::kDone) break;
      if (p == baton::serving::RequestHandle::Poll::kToken) out[i].events.push_back(e);
    }
    out[i].summary = handles[i]->summary();
  }
  return out;
}

}  // namespace

TEST_CASE("the scheduler over a 2-worker cluster is bitwise equal to one process", "[pipeline]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  baton::LocalModelOptions lo;
  lo.threads = 1;
  lo.max_sequences = 4;
  lo.n_ctx = 128;
  baton::LocalModel local(model, lo);
  const auto want = serve(local.head(), local.layers(), local.tokenizer());

  auto w = baton::test::spawn_workers(model, 2);
  baton::pipeline::ClusterOptions co;
  co.threads = 1;
  co.max_sequences = 4;
  co.n_ctx = 128;
  baton::pipeline::Cluster cluster(baton::test::config_of(baton::test::cluster_yaml(
                                       model, {{w[0].get(), 0, 1}, {w[1].get(), 2, 4}}, "insecure: true")),
                                   co);
  REQUIRE(cluster.layers().max_in_flight() == 2);
  const auto got = serve(cluster.head(), cluster.layers(), cluster.tokenizer());

  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("request " << i << ": " << got[i].summary.error);
    CHECK(want[i].summary.finish_reason == "length");
    CHECK(got[i].summary.finish_reason == "length");
    REQUIRE(got[i].events.size() == want[i].events.size());
    CHECK(got[i].events.size() == static_cast<size_t>(10 + 4 * i));
    for (size_t k = 0; k < got[i].events.size(); ++k) {
      INFO("token " << k);
      CHECK(got[i].events[k].token == want[i].events[k].token);
      CHECK(got[i].events[k].text == want[i].events[k].text);
      CHECK(got[i].events[k].logprob == want[i].events[k].logprob);  // bitwise
      REQUIRE(got[i].events[k].top.size() == want[i].events[k].top.size());
      for (size_t t = 0; t < got[i].events[k].top.size(); ++t) {
        CHECK(got[i].events[k].top[t].id == want[i].events[k].top[t].id);
        CHECK(got[i].events[k].top[t].logprob == want[i].events[k].top[t].logprob);
      }
    }
  }
  // The passes really went through the chain, several at a time.
  CHECK(cluster.metrics().passes > 10);
  CHECK(cluster.metrics().peak_in_flight == 2);
}
