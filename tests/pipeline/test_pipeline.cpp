// The pipeline across real engine-worker processes on 127.0.0.1: bitwise equality with one
// process for several splits and models, and the failure paths (dead worker, absent worker,
// wrong model, hostile peers).
#include <catch2/catch.hpp>
#include <fmt/core.h>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>

#include "engine/base/error.h"
#include "engine/cluster/cluster_config.h"
#include "engine/model/model_config.h"
#include "engine/pipeline/cluster.h"
#include "engine/pipeline/wire.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/local_model.h"
#include "fixtures.h"
#include "gguf/gguf_file.h"
#include "gguf/model_identity.h"
#include "net/raw_peer.h"
#include "support/ports.h"
#include "cluster_helpers.h"
#include "worker_process.h"

namespace {

using baton::test::WorkerProcess;
using Clock = std::chrono::steady_clock;

using baton::test::cluster_yaml;
using baton::test::config_of;
using Node = baton::test::ClusterNode;

// Greedy with the top 5 log-probabilities, so a comparison covers the whole distribution's head.
baton::GenerateOptions greedy_top5(int n) { return baton::test::greedy_options(n, 5); }

std::vector<int32_t> prompt_of(const baton::tokenizer::Tokenizer& tok) {
  return tok.encode("Once upon a time, in a small town, there lived", true, true);
}

std::vector<baton::GeneratedStep> reference(const std::string& model, int n) {
  baton::LocalModelOptions lo;
  lo.threads = 1;
  baton::LocalModel m(model, lo);
  baton::Generator g(m.head(), m.layers());
  return g.generate(1, prompt_of(m.tokenizer()), greedy_top5(n)).steps;
}

void require_same(const std::vector<baton::GeneratedStep>& a, const std::vector<baton::GeneratedStep>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("step " << i);
    REQUIRE(a[i].token == b[i].token);
    REQUIRE(a[i].logprob == b[i].logprob);  // bitwise: no tolerance
    REQUIRE(a[i].top.size() == b[i].top.size());
    for (size_t k = 0; k < a[i].top.size(); ++k) {
      REQUIRE(a[i].top[k].id == b[i].top[k].id);
      REQUIRE(a[i].top[k].logprob == b[i].top[k].logprob);
    }
  }
}

std::vector<std::unique_ptr<WorkerProcess>> spawn(const std::string& model, int n,
                                                  const std::string& secret_file = "") {
  std::vector<std::unique_ptr<WorkerProcess>> w;
  for (int i = 0; i < n; ++i)
    w.push_back(std::make_unique<WorkerProcess>(fmt::format("node-{:02}", i + 1), model,
                                                secret_file.empty()
                                                    ? std::vector<std::string>{"--insecure"}
                                                    : std::vector<std::string>{"--secret-file", secret_file}));
  return w;
}

std::string write_secret(const std::string& secret) {
  static int n = 0;
  std::string path = baton::test::temp_dir() + "/secret-" + std::to_string(n++);
  std::ofstream(path) << secret << "\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  return path;
}

}  // namespace

TEST_CASE("cluster generation is bitwise identical to one process for any split", "[pipeline]") {
  const auto start = Clock::now();
  struct Case {
    std::string model;
    std::vector<std::vector<std::pair<int64_t, int64_t>>> splits;
  };
  const std::vector<Case> cases = {
      {"models/stories260K.gguf",
       {{{0, 4}}, {{0, 1}, {2, 4}}, {{0, 0}, {1, 3}, {4, 4}}, {{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}}}},
      {"models/synthetic/tl256-Q4_K_M.gguf", {{{0, 3}}, {{0, 2}, {3, 3}}, {{0, 0}, {1, 1}, {2, 3}}}},
      {"models/synthetic/tq3-256-Q8_0.gguf", {{{0, 0}, {1, 2}}, {{0, 0}, {1, 1}, {2, 2}}}},
  };
  const std::string secret = write_secret("pipeline test secret");
  for (const auto& c : cases) {
    const std::string model = baton::test::shared_path(c.model);
    const auto want = reference(model, 24);
    REQUIRE(want.size() > 0);
    auto workers = spawn(model, 5, secret);
    for (const auto& split : c.splits) {
      std::vector<Node> nodes;
      for (size_t i = 0; i < split.size(); ++i) nodes.push_back({workers[i].get(), split[i].first, split[i].second});
      INFO(c.model << " on " << split.size() << " workers");
      baton::pipeline::ClusterOptions co;
      co.threads = 1;
      baton::pipeline::Cluster cluster(config_of(cluster_yaml(model, nodes, "secret_file: " + secret)), co);
      baton::Generator g(cluster.head(), cluster.layers());
      auto got = g.generate(1, prompt_of(cluster.tokenizer()), greedy_top5(24)).steps;
      require_same(want, got);
      // A second request on the same cluster (sequence reset in between) is identical too.
      require_same(want, g.generate(1, prompt_of(cluster.tokenizer()), greedy_top5(24)).steps);
      auto stats = cluster.stats();
      REQUIRE(stats.size() == split.size());
      for (const auto& s : stats) REQUIRE(s.values.at("forwards") > 0);
    }
  }
  REQUIRE(Clock::now() - start < std::chrono::seconds(120));
}

TEST_CASE("a worker killed mid-generation fails the request naming it, quickly", "[pipeline]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  auto workers = spawn(model, 3);
  baton::pipeline::ClusterOptions co;
  co.threads = 1;
  baton::pipeline::Cluster cluster(
      config_of(cluster_yaml(model, {{workers[0].get(), 0, 1}, {workers[1].get(), 2, 3}, {workers[2].get(), 4, 4}},
                             "insecure: true")),
      co);
  baton::Generator g(cluster.head(), cluster.layers());
  int steps = 0;
  Clock::time_point killed;
  try {
    g.generate(1, prompt_of(cluster.tokenizer()), greedy_top5(200), [&](const baton::GeneratedStep&) {
      if (++steps == 5) {
        workers[1]->kill_now();
        killed = Clock::now();
      }
      return true;
    });
    FAIL("generation survived a dead worker");
  } catch (const baton::Error& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("node-02") != std::string::npos);
    CHECK(Clock::now() - killed < std::chrono::seconds(5));
  }
  // The cluster stays failed (no hang) for later requests.
  CHECK_THROWS_AS(g.generate(1, prompt_of(cluster.tokenizer()), greedy_top5(4)), baton::Error);
}

TEST_CASE("a worker that never starts times out the load, naming it", "[pipeline]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  auto workers = spawn(model, 1);
  const baton::test::RefusingPort dead;  // node-02's port: nobody listens there
  const uint16_t dead_port = dead.port();
  std::string yaml = fmt::format(
      "model: {}\ncluster:\n  insecure: true\n  connect_timeout: 1\n  nodes:\n"
      "    - {{ id: node-01, host: 127.0.0.1, port: {}, layers: [0, 2] }}\n"
      "    - {{ id: node-02, host: 127.0.0.1, port: {}, layers: [3, 4] }}\n",
      model, workers[0]->port(), dead_port);
  const auto t0 = Clock::now();
  try {
    baton::pipeline::Cluster cluster(config_of(yaml));
    FAIL("loaded a cluster with a missing worker");
  } catch (const baton::Error& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("node node-02 (127.0.0.1:" + std::to_string(dead_port) + ") did not answer") !=
          std::string::npos);
  }
  CHECK(Clock::now() - t0 < std::chrono::seconds(5));
}

TEST_CASE("a worker with another model refuses to prepare and the load rolls back", "[pipeline]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  const std::string other = baton::test::shared_path("models/synthetic/tl256-Q4_K_M.gguf");
  WorkerProcess good("node-01", model, {"--insecure"});
  WorkerProcess bad("node-02", other, {"--insecure"});
  try {
    baton::pipeline::Cluster cluster(config_of(cluster_yaml(model, {{&good, 0, 2}, {&bad, 3, 4}}, "insecure: true")));
    FAIL("loaded a cluster with a foreign model");
  } catch (const baton::Error& e) {
    std::string what = e.what();
    INFO(what);
    CHECK(what.find("node node-02") != std::string::npos);
    CHECK(what.find("failed to prepare") != std::string::npos);
    CHECK(what.find("identity") != std::string::npos);
    CHECK(what.find("rolled back") != std::string::npos);
  }
  // node-01 had prepared and must have released that load.
  const bool rolled_back = baton::test::WorkerProcess::eventually_contains(good, "(rollback)");
  INFO(good.log());
  CHECK(rolled_back);
  // Both still serve a correct cluster afterwards (node-02 as a one-node cluster of its own model).
  baton::pipeline::Cluster ok(config_of(cluster_yaml(model, {{&good, 0, 4}}, "insecure: true")));
  baton::Generator g(ok.head(), ok.layers());
  CHECK(g.generate(1, prompt_of(ok.tokenizer()), greedy_top5(4)).steps.size() == 4);
}

TEST_CASE("hostile peers are refused and the worker keeps serving", "[pipeline]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  const std::string secret = write_secret("the right secret");
  const std::string wrong = write_secret("the wrong secret");
  WorkerProcess w("node-01", model, {"--secret-file", secret});
  const std::string yaml = cluster_yaml(model, {{&w, 0, 4}}, "secret_file: " + secret, 2);
  // Wrong secret through the real coordinator.
  CHECK_THROWS_WITH(baton::pipeline::Cluster(config_of(cluster_yaml(model, {{&w, 0, 4}}, "secret_file: " + wrong, 2))),
                    Catch::Contains("node node-01"));
  // Insecure coordinator against a secure worker.
  CHECK_THROWS_AS(baton::pipeline::Cluster(config_of(cluster_yaml(model, {{&w, 0, 4}}, "insecure: true", 2))),
                  baton::Error);
  {  // Protocol version mismatch.
    auto raw = baton::net::test::RawSocket::connect_to(w.port());
    CHECK_FALSE(raw.handshake("old-coordinator", "the right secret", baton::net::kProtocolVersion + 1));
  }
  {  // Random bytes.
    auto raw = baton::net::test::RawSocket::connect_to(w.port());
    std::mt19937 rng(7);
    std::vector<uint8_t> junk(4096);
    for (auto& b : junk) b = static_cast<uint8_t>(rng());
    raw.send_bytes(junk);
    CHECK(raw.closed_by_peer());
  }
  {  // A truncated frame after a good handshake, then silence.
    auto raw = baton::net::test::RawSocket::connect_to(w.port());
    REQUIRE(raw.handshake("half-coordinator", "the right secret"));
    auto frame = raw.encode(baton::net::Commit{1});
    frame.resize(frame.size() / 2);
    raw.send_bytes(frame);
  }
  {  // A Forward before any load: answered with an ErrorReport, not a crash.
    auto raw = baton::net::test::RawSocket::connect_to(w.port());
    REQUIRE(raw.handshake("eager-coordinator", "the right secret"));
    float row[4] = {};
    auto t = baton::pipeline::make_f32_tensor(row, 1, 4);
    std::vector<uint8_t> body(t.body.bytes().begin(), t.body.bytes().end());
    REQUIRE(raw.send_message(baton::net::Forward{9, {{1, 0, true}}, t.ref, {}}, body));
    auto reply = raw.recv_message();
    REQUIRE(reply);
    REQUIRE(std::holds_alternative<baton::net::ErrorReport>(*reply));
    CHECK(std::get<baton::net::ErrorReport>(*reply).message.find("node-01") != std::string::npos);
    CHECK(std::get<baton::net::ErrorReport>(*reply).code == baton::net::ErrorCode::kNotServing);
    CHECK(std::get<baton::net::ErrorReport>(*reply).micro_batch_id == std::optional<uint64_t>(9));
  }
  // Still serving a good coordinator, bitwise as before.
  baton::pipeline::ClusterOptions co;
  co.threads = 1;
  baton::pipeline::Cluster cluster(config_of(yaml), co);
  baton::Generator g(cluster.head(), cluster.layers());
  require_same(reference(model, 8), g.generate(1, prompt_of(cluster.tokenizer()), greedy_top5(8)).steps);
  CHECK(w.log().find("refused connection") != std::string::npos);
}

TEST_CASE("engine-worker shuts down cleanly on SIGTERM and requires an auth choice", "[pipeline]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  WorkerProcess w("node-01", model, {"--insecure"});
  {
    baton::pipeline::Cluster cluster(config_of(cluster_yaml(model, {{&w, 0, 4}}, "insecure: true")));
    CHECK(w.terminate() == 0);
  }
  CHECK_THROWS(WorkerProcess("node-02", model, {}));
}

TEST_CASE("sequence ids beyond 32 bits are refused, not truncated", "[pipeline]") {
  baton::TokenBatch b;
  b.add(uint64_t{1} << 32, 0, true);
  CHECK_THROWS_WITH(baton::pipeline::to_wire(b), Catch::Contains("32 bits"));
  baton::TokenBatch ok;
  ok.add(7, 3, true);
  auto back = baton::pipeline::from_wire(baton::pipeline::to_wire(ok));
  CHECK(back.seq_ids == ok.seq_ids);
  CHECK(back.positions == ok.positions);
  CHECK(back.output == ok.output);
}

TEST_CASE("a refused Forward is reported naming the node and the worker keeps serving", "[pipeline]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  auto workers = spawn(model, 2);
  baton::pipeline::ClusterOptions co;
  co.threads = 1;
  co.n_ctx = 32;
  baton::pipeline::Cluster cluster(
      config_of(cluster_yaml(model, {{workers[0].get(), 0, 2}, {workers[1].get(), 3, 4}}, "insecure: true")), co);
  REQUIRE(cluster.layers().n_ctx() == 32);
  baton::TokenBatch batch;
  batch.add(1, 40, true);  // outside the 32-position context of every stage
  std::vector<float> hidden(static_cast<size_t>(cluster.config().n_embd), 0.5f), out;
  const auto t0 = Clock::now();
  CHECK_THROWS_WITH(cluster.layers().forward(batch, hidden, out), Catch::Contains("node node-01"));
  CHECK(Clock::now() - t0 < std::chrono::seconds(5));
  cluster.layers().reset_sequence(1);
  baton::Generator g(cluster.head(), cluster.layers());
  require_same(reference(model, 8), g.generate(1, prompt_of(cluster.tokenizer()), greedy_top5(8)).steps);
}

// The Commit comes straight from the coordinator, Forwards through the earlier stages: on two
// TCP connections a Forward can arrive first (seen under ASan in CI). It must wait for the
// Commit, keep its place in the order, and give the same bits as one sent after it.
TEST_CASE("Forwards that overtake the Commit wait for it, in order, with the same result", "[pipeline]") {
  namespace net = baton::net;
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  WorkerProcess w("node-01", model, {"--insecure"});
  auto raw = net::test::RawSocket::connect_to(w.port());
  REQUIRE(raw.handshake("coordinator", ""));
  // Skips the clock probes the worker sends on every link.
  auto next = [&raw]() -> std::pair<net::Message, std::vector<uint8_t>> {
    for (int i = 0; i < 1000; ++i) {
      auto f = raw.recv_frame();
      if (!f) FAIL("the worker sent nothing or closed the connection");
      if (std::holds_alternative<net::Ready>(f->first) || std::holds_alternative<net::Hidden>(f->first) ||
          std::holds_alternative<net::ErrorReport>(f->first) || std::holds_alternative<net::Failed>(f->first))
        return std::move(*f);
    }
    FAIL("no answer among 1000 frames");
    return {};
  };
  net::Prepare p;
  p.load_id = 7;
  const auto file = baton::gguf::GgufFile::open(model);
  p.model_identity = baton::gguf::model_identity(*file);
  p.layer_first = 0;
  p.layer_last = 4;
  p.n_ctx = 32;  // typed Prepare fields since protocol 4 (were the string options n_ctx / max_sequences)
  p.max_sequences = 4;
  REQUIRE(raw.send_message(p));
  REQUIRE(std::holds_alternative<net::Ready>(next().first));

  const auto n_embd = static_cast<size_t>(baton::ModelConfig::from_metadata(file->metadata()).n_embd);
  std::vector<float> row(n_embd);
  for (size_t i = 0; i < n_embd; ++i) row[i] = 0.01f * static_cast<float>(i % 17) - 0.05f;
  auto send_forward = [&](uint64_t micro_batch, uint32_t seq) {
    auto t = baton::pipeline::make_f32_tensor(row.data(), 1, n_embd);
    std::vector<uint8_t> body(t.body.bytes().begin(), t.body.bytes().end());
    REQUIRE(raw.send_message(net::Forward{micro_batch, {{seq, 0, true}}, t.ref, {}}, body));
  };
  send_forward(1, 0);  // before the Commit
  send_forward(2, 1);
  REQUIRE(raw.send_message(net::Commit{7}));
  send_forward(3, 2);  // after it

  std::vector<std::vector<uint8_t>> rows;
  for (uint64_t id = 1; id <= 3; ++id) {
    auto [m, body] = next();
    INFO("answer " << id << ": " << net::message_name(m));
    REQUIRE(std::holds_alternative<net::Hidden>(m));
    const auto& h = std::get<net::Hidden>(m);
    CHECK(h.micro_batch_id == id);
    REQUIRE(h.hidden.bytes == n_embd * sizeof(float));
    rows.emplace_back(body.begin() + static_cast<ptrdiff_t>(h.hidden.offset),
                      body.begin() + static_cast<ptrdiff_t>(h.hidden.offset + h.hidden.bytes));
  }
  CHECK(rows[0] == rows[2]);  // same input, each a fresh sequence at position 0: bitwise
  CHECK(rows[1] == rows[2]);
  CHECK(w.log().find("arrived before the Commit") != std::string::npos);
}
