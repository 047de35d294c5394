// Several micro-batches in flight along a chain of real engine-worker processes: results
// bitwise equal to the same batches run one at a time in one process, sequence resets ordered
// with the passes at every stage, failures fail every pass in flight; activations on the wire
// as F16/BF16; the coordinator's measured metrics.
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

#include "cluster_helpers.h"
#include "engine/base/error.h"
#include "engine/pipeline/cluster.h"
#include "engine/runtime/local_model.h"

namespace {

using baton::test::cluster_yaml;
using baton::test::ClusterNode;
using baton::test::config_of;
using baton::test::spawn_workers;

// One step of a script: a forward pass, or a sequence reset.
struct Step {
  baton::TokenBatch batch;
  std::vector<int32_t> tokens;
  int64_t reset = -1;  // >= 0: reset this sequence instead
};

// Prompts for sequences 0..3, decode rounds, a pass mixing two sequences, then sequence 2 is
// reset and sequence 4 takes its KV slot (every stage must have applied the reset before
// sequence 4's first Forward arrives, or its cache is full), and 3 more rounds.
std::vector<Step> script(int64_t n_vocab) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> tok(1, static_cast<int32_t>(n_vocab - 1));
  std::vector<Step> s;
  std::vector<int32_t> pos(5, 0);
  auto pass = [&](std::vector<std::pair<uint64_t, int>> parts) {
    Step st;
    for (auto [seq, n] : parts)
      for (int i = 0; i < n; ++i) {
        st.batch.add(seq, pos[seq]++, i + 1 == n);
        st.tokens.push_back(tok(rng));
      }
    s.push_back(std::move(st));
  };
  const int prompt[] = {5, 9, 3, 7};
  for (uint64_t q = 0; q < 4; ++q) pass({{q, prompt[q]}});
  for (int r = 0; r < 4; ++r)
    for (uint64_t q = 0; q < 4; ++q) pass({{q, 1}});
  pass({{0, 2}, {1, 3}});
  s.push_back({{}, {}, 2});
  pass({{4, 6}});
  for (int r = 0; r < 3; ++r)
    for (uint64_t q : {0, 1, 3, 4}) pass({{q, 1}});
  return s;
}

std::vector<std::vector<float>> run_local(const std::string& model, const std::vector<Step>& steps) {
  baton::LocalModelOptions lo;
  lo.threads = 1;
  lo.max_sequences = 4;
  lo.n_ctx = 64;
  baton::LocalModel m(model, lo);
  std::vector<std::vector<float>> out;
  for (const auto& st : steps) {
    if (st.reset >= 0) {
      m.layers().reset_sequence(static_cast<uint64_t>(st.reset));
      continue;
    }
    std::vector<float> hidden(st.tokens.size() * static_cast<size_t>(m.config().n_embd)), rows;
    m.head().embed(st.tokens, hidden.data());
    m.layers().forward(st.batch, hidden, rows);
    out.push_back(rows);
  }
  return out;
}

// Keeps up to max_in_flight() passes in the chain; resets go out without waiting.
std::vector<std::vector<float>> run_pipelined(baton::pipeline::Cluster& c, const std::vector<Step>& steps,
                                              size_t* max_seen = nullptr) {
  auto& layers = c.layers();
  std::vector<std::vector<float>> out;
  for (const auto& st : steps) {
    if (st.reset >= 0) {
      layers.reset_sequence(static_cast<uint64_t>(st.reset));
      continue;
    }
    if (static_cast<int>(layers.in_flight()) == layers.max_in_flight()) layers.finish(out.emplace_back());
    std::vector<float> hidden(st.tokens.size() * static_cast<size_t>(c.config().n_embd));
    c.head().embed(st.tokens, hidden.data());
    layers.submit(st.batch, hidden);
    if (max_seen) *max_seen = std::max(*max_seen, layers.in_flight());
  }
  while (layers.in_flight() > 0) layers.finish(out.emplace_back());
  return out;
}

baton::pipeline::ClusterOptions options4() {
  baton::pipeline::ClusterOptions co;
  co.threads = 1;
  co.max_sequences = 4;
  co.n_ctx = 64;
  return co;
}

}  // namespace

TEST_CASE("micro-batches in flight on 2 and 3 workers are bitwise equal to one at a time locally", "[pipeline]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  auto workers = spawn_workers(model, 3);
  std::vector<Step> steps;
  std::vector<std::vector<float>> want;
  {
    baton::pipeline::Cluster probe(config_of(cluster_yaml(model, {{workers[0].get(), 0, 4}}, "insecure: true")),
                                   options4());
    steps = script(probe.head().n_vocab());
  }
  want = run_local(model, steps);
  const std::vector<std::vector<ClusterNode>> splits = {
      {{workers[0].get(), 0, 1}, {workers[1].get(), 2, 4}},
      {{workers[0].get(), 0, 0}, {workers[1].get(), 1, 3}, {workers[2].get(), 4, 4}}};
  for (const auto& split : splits) {
    INFO(split.size() << " workers");
    baton::pipeline::Cluster cluster(config_of(cluster_yaml(model, split, "insecure: true")), options4());
    REQUIRE(cluster.layers().max_in_flight() == static_cast<int>(split.size()));
    size_t max_seen = 0;
    auto got = run_pipelined(cluster, steps, &max_seen);
    CHECK(max_seen == split.size());
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("pass " << i);
      REQUIRE(got[i].size() == want[i].size());
      REQUIRE(std::memcmp(got[i].data(), want[i].data(), got[i].size() * sizeof(float)) == 0);
    }
    // The coordinator measured every pass, with each stage's own figures.
    const auto m = cluster.metrics();
    CHECK(m.passes == want.size());
    CHECK(m.failed_passes == 0);
    CHECK(m.peak_in_flight == static_cast<int>(split.size()));
    REQUIRE(m.stages.size() == split.size());
    double residence = 0;
    for (const auto& s : m.stages) {
      CHECK(s.compute_ms > 0);
      CHECK(s.residence_ms >= s.compute_ms);
      residence += s.residence_ms;
    }
    CHECK(m.round_trip_ms >= residence);
    CHECK(m.network_ms > 0);
    // f32 on every hop: 4 bytes per element; the first hop carries every token.
    CHECK(m.bytes_to_first == static_cast<double>(m.tokens) * 4.0 * static_cast<double>(cluster.config().n_embd));
    // And the sequential API still works on the same cluster afterwards.
    std::vector<float> hidden(static_cast<size_t>(cluster.config().n_embd)), rows;
    baton::TokenBatch b;
    b.add(3, 60, true);
    cluster.layers().forward(b, hidden, rows);
    CHECK(rows.size() == hidden.size());
  }
}

TEST_CASE("a dead worker fails every pass in flight, naming it", "[pipeline]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  auto workers = spawn_workers(model, 3);
  baton::pipeline::Cluster cluster(
      config_of(cluster_yaml(model, {{workers[0].get(), 0, 1}, {workers[1].get(), 2, 3}, {workers[2].get(), 4, 4}},
                             "insecure: true")),
      options4());
  auto& layers = cluster.layers();
  const size_t n_embd = static_cast<size_t>(cluster.config().n_embd);
  workers[1]->kill_now();
  const auto t0 = std::chrono::steady_clock::now();
  std::string error;
  try {
    for (uint64_t q = 0; q < 3; ++q) {
      baton::TokenBatch b;
      b.add(q, 0, true);
      std::vector<float> hidden(n_embd, 0.25f);
      layers.submit(b, hidden);
    }
    std::vector<float> rows;
    for (int i = 0; i < 3; ++i) layers.finish(rows);
    FAIL("passes survived a dead worker");
  } catch (const baton::Error& e) {
    error = e.what();
  }
  INFO(error);
  CHECK(error.find("node-02") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  CHECK(layers.in_flight() == 0);
  std::vector<float> rows;
  CHECK_THROWS_WITH(layers.finish(rows), Catch::Contains("without an unfinished pass"));
}

TEST_CASE("activations as f16 or bf16 halve the bytes on the wire and stay close", "[pipeline]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  auto workers = spawn_workers(model, 2);
  std::vector<Step> steps;
  {
    baton::pipeline::Cluster probe(config_of(cluster_yaml(model, {{workers[0].get(), 0, 4}}, "insecure: true")),
                                   options4());
    steps = script(probe.head().n_vocab());
  }
  const auto want = run_local(model, steps);
  const std::vector<ClusterNode> split = {{workers[0].get(), 0, 1}, {workers[1].get(), 2, 4}};
  baton::pipeline::Cluster f32(config_of(cluster_yaml(model, split, "insecure: true")), options4());
  run_pipelined(f32, steps);
  const auto m32 = f32.metrics();
  CHECK(m32.activations == "f32");
  for (const char* dtype : {"f16", "bf16"}) {
    INFO(dtype);
    baton::pipeline::Cluster c(
        config_of(cluster_yaml(model, split, "insecure: true", 5, 20, fmt::format("activations: {}", dtype))),
        options4());
    const auto got = run_pipelined(c, steps);
    const auto m = c.metrics();
    CHECK(m.activations == dtype);
    // Exactly half the bytes on every hop.
    CHECK(m.bytes_to_first * 2 == m32.bytes_to_first);
    for (size_t i = 0; i < m.stages.size(); ++i) CHECK(m.stages[i].bytes_out * 2 == m32.stages[i].bytes_out);
    // Close, not equal: each of the 3 hops rounds every activation once (f16: 2^-11 relative,
    // bf16: 2^-8), and the rounding of the embeddings and of stage 1's output is carried
    // through the following layers (3 roundings, a little amplified). The bound is on |got - want| relative to the
    // row's largest magnitude; observed with this model: see the INFO output.
    const double unit = std::string(dtype) == "f16" ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    double worst = 0;
    REQUIRE(got.size() == want.size());
    for (size_t p = 0; p < got.size(); ++p) {
      const size_t n_embd = static_cast<size_t>(c.config().n_embd);
      for (size_t r = 0; r * n_embd < got[p].size(); ++r) {
        double scale = 0, diff = 0;
        for (size_t k = 0; k < n_embd; ++k) {
          scale = std::max(scale, std::fabs(double{want[p][r * n_embd + k]}));
          diff = std::max(diff, std::fabs(double{got[p][r * n_embd + k]} - want[p][r * n_embd + k]));
        }
        worst = std::max(worst, diff / scale);
      }
    }
    INFO("worst relative difference " << worst << " = " << worst / unit << " units of the dtype");
    CHECK(worst > 0);         // it really travelled rounded
    CHECK(worst < 4 * unit);  // observed: f16 1.7 units, bf16 0.73 units
  }
}

TEST_CASE("cluster.activations accepts f32, f16, bf16 only", "[pipeline]") {
  CHECK_THROWS_WITH(config_of("model: m.gguf\ncluster:\n  insecure: true\n  activations: f8\n  nodes:\n"
                              "    - { id: a, host: h, port: 1, layers: [0, 1] }\n"),
                    Catch::Contains("cluster.activations must be f32, f16 or bf16, found 'f8'"));
  CHECK(config_of("model: m.gguf\ncluster:\n  insecure: true\n  activations: bf16\n  nodes:\n"
                  "    - { id: a, host: h, port: 1, layers: [0, 1] }\n")
            .activations == "bf16");
}
