// Pipelined prefill and prompt-prefix reuse through real engine-worker processes: a prompt's
// pieces in flight at every stage at once, and a chat turn continued from the cached KV of the
// last, give bitwise the tokens and log-probabilities of one process computing whole chunks
// from scratch; a worker lost in the middle of a pipelined prompt fails it naming the node.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <cstring>
#include <future>
#include <random>

#include "cluster_helpers.h"
#include "engine/pipeline/cluster.h"
#include "engine/runtime/local_model.h"
#include "engine/runtime/prompt_pieces.h"
#include "engine/serving/scheduler.h"

namespace {

using namespace baton;

const char* kModel = "models/synthetic/tl256-Q4_K_M.gguf";

std::vector<int32_t> random_prompt(int64_t n_vocab, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(3, static_cast<int32_t>(n_vocab - 1));
  std::vector<int32_t> p(n);
  for (auto& t : p) t = d(rng);
  return p;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void check_same(const GenerationResult& got, const GenerationResult& want) {
  REQUIRE(got.steps.size() == want.steps.size());
  for (size_t i = 0; i < want.steps.size(); ++i) {
    INFO("step " << i);
    CHECK(got.steps[i].token == want.steps[i].token);
    CHECK(same_bits(got.steps[i].logprob, want.steps[i].logprob));
    REQUIRE(got.steps[i].top.size() == want.steps[i].top.size());
    for (size_t j = 0; j < want.steps[i].top.size(); ++j)
      CHECK(same_bits(got.steps[i].top[j].logprob, want.steps[i].top[j].logprob));
  }
}

GenerateOptions options(int n_batch, int prefill_chunk) {
  GenerateOptions go = test::greedy_options(8, 3);
  go.n_batch = n_batch;
  go.prefill_chunk = prefill_chunk;
  return go;
}

std::unique_ptr<LocalModel> local_model(const std::string& path, int max_sequences) {
  LocalModelOptions lo;
  lo.threads = 1;
  lo.n_ctx = 1024;
  lo.max_sequences = max_sequences;
  return std::make_unique<LocalModel>(path, lo);
}

// Workers each holding a contiguous share of the layers.
std::unique_ptr<pipeline::Cluster> open_cluster(const std::string& path, int64_t n_layer,
                                                const std::vector<std::unique_ptr<test::WorkerProcess>>& w,
                                                int max_sequences) {
  std::vector<test::ClusterNode> nodes;
  const int64_t n = static_cast<int64_t>(w.size());
  for (int64_t i = 0; i < n; ++i) nodes.push_back({w[i].get(), i * n_layer / n, (i + 1) * n_layer / n - 1});
  pipeline::ClusterOptions co;
  co.threads = 1;
  co.n_ctx = 1024;
  co.max_sequences = max_sequences;
  return std::make_unique<pipeline::Cluster>(test::config_of(test::cluster_yaml(path, nodes, "insecure: true")), co);
}

}  // namespace

TEST_CASE("pipelined prefill through 2 and 3 real workers is bitwise one process's whole chunks, for every piece size",
          "[pipeline]") {
  const std::string path = test::shared_path(kModel);
  auto local = local_model(path, 1);
  const auto prompt = random_prompt(local->config().n_vocab, 600, 1);
  Generator reference(local->head(), local->layers());
  const auto want = reference.generate(1, prompt, options(256, 256));
  for (int stages : {2, 3}) {
    auto w = test::spawn_workers(path, stages);
    auto cluster = open_cluster(path, local->config().n_layer, w, 1);
    REQUIRE(cluster->layers().max_in_flight() == stages);
    for (int chunk : {0, 1, 7, 32, 100}) {
      INFO(stages << " stages, prefill chunk " << chunk);
      Generator generator(cluster->head(), cluster->layers());
      check_same(generator.generate(1, prompt, options(256, chunk)), want);
    }
    CHECK(cluster->metrics().peak_in_flight == stages);  // the pieces filled the chain
  }
}

TEST_CASE("a short prompt in automatic pieces, and one more pass in flight than stages, are bitwise one process's",
          "[pipeline]") {
  const std::string path = test::shared_path(kModel);
  auto local = local_model(path, 1);
  Generator reference(local->head(), local->layers());
  for (int stages : {2, 3}) {
    auto w = test::spawn_workers(path, stages);
    for (int extra : {0, 1}) {
      std::vector<test::ClusterNode> nodes;
      const int64_t n_layer = local->config().n_layer;
      for (int64_t i = 0; i < stages; ++i)
        nodes.push_back({w[i].get(), i * n_layer / stages, (i + 1) * n_layer / stages - 1});
      pipeline::ClusterOptions co;
      co.threads = 1;
      co.n_ctx = 1024;
      co.max_in_flight = extra ? stages + 1 : 0;
      co.take_over = true;  // the workers may not have seen the previous cluster of this loop go yet
      pipeline::Cluster cluster(test::config_of(test::cluster_yaml(path, nodes, "insecure: true")), co);
      REQUIRE(cluster.layers().max_in_flight() == stages + extra);
      // 128 and 100 tokens: automatic pieces of 16 and 12 on 2 stages, 8 on 3 (not 32 / 128 per stage).
      for (size_t n : {100, 128, 300}) {
        INFO(stages << " stages, " << stages + extra << " passes in flight, prompt " << n);
        const auto prompt = random_prompt(local->config().n_vocab, n, static_cast<uint32_t>(n));
        const auto want = reference.generate(1, prompt, options(256, 256));
        Generator generator(cluster.head(), cluster.layers());
        check_same(generator.generate(1, prompt, options(256, 0)), want);
      }
      CHECK(cluster.metrics().peak_in_flight == stages + extra);
    }
  }
}

TEST_CASE("a chat turn continued from the cached KV on 2 real workers equals the turn from scratch", "[pipeline]") {
  const std::string path = test::shared_path(kModel);
  auto local = local_model(path, 1);
  auto w = test::spawn_workers(path, 2);
  auto cluster = open_cluster(path, local->config().n_layer, w, 2);
  serving::SchedulerOptions so;
  so.slots = 2;
  so.n_batch = 128;
  serving::Scheduler scheduler(cluster->head(), cluster->layers(), cluster->tokenizer(), so);
  auto history = random_prompt(local->config().n_vocab, 180, 2);
  size_t previous = 0;
  for (int turn = 0; turn < 3; ++turn) {
    INFO("turn " << turn);
    serving::CompletionRequest r;
    r.prompt = history;
    r.max_tokens = 6;
    r.sampling.temperature = 0;
    r.ignore_eos = true;
    r.logprobs = true;
    r.n_top_logprobs = 2;
    auto handle = scheduler.submit(r);
    std::vector<serving::TokenEvent> events;
    for (;;) {
      serving::TokenEvent e;
      const auto poll = handle->next(e, std::chrono::seconds(30));
      REQUIRE(poll != serving::RequestHandle::Poll::kTimeout);
      if (poll == serving::RequestHandle::Poll::kDone) break;
      events.push_back(e);
    }
    const auto summary = handle->summary();
    REQUIRE(summary.finish_reason == "length");
    CHECK(summary.cached_tokens ==
          (turn == 0 ? 0 : prefix_reuse_start(history.size(), reusable_prefix(previous, 128), 128)));
    if (turn > 0) CHECK(summary.cached_tokens > 100);
    GenerateOptions go = options(128, 128);
    go.n_predict = 6;
    go.n_top_logprobs = 2;
    Generator reference(local->head(), local->layers());
    const auto want = reference.generate(1, history, go);
    REQUIRE(events.size() == want.steps.size());
    for (size_t k = 0; k < events.size(); ++k) {
      CHECK(events[k].token == want.steps[k].token);
      CHECK(same_bits(events[k].logprob, want.steps[k].logprob));
    }
    previous = history.size();
    for (const auto& e : events) history.push_back(e.token);
    const auto more = random_prompt(local->config().n_vocab, 50, 10 + turn);
    history.insert(history.end(), more.begin(), more.end());
  }
  CHECK(scheduler.stats().cache_hits == 2);
}

TEST_CASE("a worker killed during a pipelined prefill fails the prompt naming it", "[pipeline]") {
  const std::string path = test::shared_path(kModel);
  auto local = local_model(path, 1);
  auto w = test::spawn_workers(path, 2);
  auto cluster = open_cluster(path, local->config().n_layer, w, 1);
  const auto prompt = random_prompt(local->config().n_vocab, 900, 3);
  // The last stage stops before the prompt's first piece reaches it: the pieces queue up in
  // front of it; then it dies with them.
  REQUIRE(w[1]->freeze());
  auto run = std::async(std::launch::async, [&] {
    Generator generator(cluster->head(), cluster->layers());
    generator.generate(1, prompt, options(512, 64));
  });
  CHECK(run.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout);  // stalled, not finished
  w[1]->kill_now();
  REQUIRE(run.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  try {
    run.get();
    FAIL("the prompt finished without its last stage");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("node-02") != std::string::npos);
  }
}

TEST_CASE("a frozen worker of a static cluster is given up after heartbeat_timeout, naming it", "[pipeline]") {
  const std::string path = test::shared_path("models/stories260K.gguf");
  auto w = test::spawn_workers(path, 2);
  pipeline::ClusterOptions co;
  co.threads = 1;
  co.n_ctx = 256;
  co.request_timeout = std::chrono::seconds(60);  // what a frozen node cost before: this long
  pipeline::Cluster cluster(test::config_of(test::cluster_yaml(path, {{w[0].get(), 0, 1}, {w[1].get(), 2, 4}},
                                                               "insecure: true", 5, 20, "heartbeat_timeout: 1")),
                            co);
  const std::vector<int32_t> prompt = cluster.tokenizer().encode("Once upon a time", true, false);
  Generator generator(cluster.head(), cluster.layers());
  REQUIRE(generator.generate(1, prompt, test::greedy_options(8)).steps.size() == 8);
  REQUIRE(w[1]->freeze());  // frozen: its connections stay open
  const auto t0 = std::chrono::steady_clock::now();
  try {
    generator.generate(1, prompt, test::greedy_options(8));
    FAIL("a pass went through a frozen worker");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("node-02") != std::string::npos);
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(waited < 10);  // heartbeat_timeout (1 s) and the link's close, not request_timeout (60 s)
  w[1]->thaw();
}
