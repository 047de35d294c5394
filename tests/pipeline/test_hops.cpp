// Per-hop network time (docs/PROTOCOL.md "Per-hop network time"): the timing fields'
// hand-over stamps and hop records, and on real engine-worker processes: every hop measured,
// >= 0, summing to the all-hops total within the error bounds, and a slow link showing up on
// exactly its own hop.
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "cluster_helpers.h"
#include "engine/base/error.h"
#include "engine/pipeline/cluster.h"
#include "engine/pipeline/wire.h"
#include "engine/runtime/generator.h"
#include "net/codec.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using baton::pipeline::ClusterMetrics;

// Generates n tokens through a fresh 2-worker cluster (stories260K: layers 0-1 | 2-4).
ClusterMetrics run_cluster(const std::vector<std::unique_ptr<baton::test::WorkerProcess>>& w, int n) {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  baton::pipeline::ClusterOptions co;
  co.threads = 1;
  baton::pipeline::Cluster cluster(baton::test::config_of(baton::test::cluster_yaml(
                                       model, {{w[0].get(), 0, 1}, {w[1].get(), 2, 4}}, "insecure: true")),
                                   co);
  std::this_thread::sleep_for(300ms);  // a few clock probes on every link
  baton::Generator g(cluster.head(), cluster.layers());
  auto prompt = cluster.tokenizer().encode("Once upon a time", true, true);
  g.generate(1, prompt, baton::test::greedy_options(n));
  return cluster.metrics();
}

double per_pass(const baton::pipeline::HopMetrics& h) { return h.network_ms / static_cast<double>(h.passes); }

}  // namespace

TEST_CASE("the timing fields carry the hand-over time and each stage's hop record", "[pipeline]") {
  // Protocol 4: the former body trailer is Forward/Hidden.sent_ns and .timings (adapted from the
  // trailer test: the same values, read back from a decoded frame instead of the body).
  const float rows[2 * 3] = {1, 2, 3, 4, 5, 6};
  auto t = baton::pipeline::make_tensor(rows, 2, 3, baton::net::DType::kF16);
  CHECK(t.body.size() == t.ref.bytes);  // the body is the tensor alone
  baton::net::Hidden h{7, {{0, 1, true}, {1, 2, true}}, t.ref};
  h.timings = {{1.5, 1.0, 24, 0.25, 0.01}, {0, 2.0, 12, 0.5, -1}};
  const auto sent = Clock::now();
  baton::pipeline::stamp_sent(h, sent, 3.25);
  const auto frame = baton::net::encode_frame(h, t.body.bytes());
  auto decoded = baton::net::decode_frame(frame, baton::net::FrameLimits{});
  REQUIRE(decoded.ok());
  const auto& back = std::get<baton::net::Hidden>(decoded->message);
  CHECK(back.sent_ns == baton::pipeline::steady_ns(sent));
  REQUIRE(back.timings.size() == 2);
  CHECK(back.timings[0].residence_ms == 1.5);
  CHECK(back.timings[0].hop_in_ms == 0.25);
  CHECK(back.timings[0].hop_in_error_ms == 0.01);
  CHECK(back.timings[1].residence_ms == 3.25);  // stamped with the hand-over
  CHECK(back.timings[1].hop_in_error_ms == -1);
  // A record that is not a time is refused with a message naming the field.
  h.timings[1].compute_ms = -1;
  CHECK_THROWS_WITH(baton::net::encode_frame(h, t.body.bytes()), Catch::Contains("Hidden.timings[1].compute_ms"));
  // hop = receipt - (sent - offset): a peer clock 5 ms ahead of ours, 1 ms on the wire.
  const auto received = sent + 1ms;
  auto hop = baton::pipeline::hop_time(baton::pipeline::steady_ns(sent) + 5'000'000, received,
                                       baton::net::ClockEstimate{5'000'000, 20'000});
  CHECK(hop.ms == Approx(1.0).margin(1e-9));
  CHECK(hop.error_ms == Approx(0.02));
  CHECK(baton::pipeline::hop_time(baton::pipeline::steady_ns(sent), received, std::nullopt).error_ms < 0);
}

TEST_CASE("every hop of a 2-worker cluster is measured, >= 0, and the hops sum to the all-hops total", "[pipeline]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  auto w = baton::test::spawn_workers(model, 2);
  const ClusterMetrics m = run_cluster(w, 12);
  REQUIRE(m.passes >= 12);
  REQUIRE(m.hops.size() == 3);
  CHECK(m.hops[0].from == "coordinator");
  CHECK(m.hops[0].to == "node-01");
  CHECK(m.hops[1].from == "node-01");
  CHECK(m.hops[1].to == "node-02");
  CHECK(m.hops[2].from == "node-02");
  CHECK(m.hops[2].to == "coordinator");
  double sum = 0, error = 0;
  for (const auto& h : m.hops) {
    INFO(h.from << " -> " << h.to << ": " << h.network_ms << " ms +- " << h.error_ms << " over " << h.passes);
    CHECK(h.passes == m.passes);
    CHECK(h.unmeasured == 0);
    CHECK(h.network_ms >= 0);
    CHECK(h.error_ms >= 0);
    CHECK(h.bytes > 0);
    sum += h.network_ms;
    error += h.error_ms;
  }
  INFO("hops " << sum << " ms, all hops " << m.network_ms << " ms, error bound " << error << " ms");
  // One machine, one steady clock: each estimate is within its bound of the truth, and the
  // truth sums exactly to round trip - residences.
  CHECK(std::abs(sum - m.network_ms) <= error + 1e-3);
}

TEST_CASE("a slow link out of the first worker shows up on its own hop only", "[pipeline]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  std::vector<std::unique_ptr<baton::test::WorkerProcess>> w;
  w.push_back(std::make_unique<baton::test::WorkerProcess>(
      "node-01", model, std::vector<std::string>{"--insecure", "--test-write-delay-ms", "100"}));
  w.push_back(std::make_unique<baton::test::WorkerProcess>("node-02", model, std::vector<std::string>{"--insecure"}));
  const ClusterMetrics m = run_cluster(w, 4);
  REQUIRE(m.hops.size() == 3);
  for (const auto& h : m.hops) REQUIRE(h.passes == m.passes);
  const double slow = per_pass(m.hops[1]);
  INFO("per pass: " << per_pass(m.hops[0]) << " / " << slow << " / " << per_pass(m.hops[2]) << " ms");
  CHECK(slow >= 100.0 - m.hops[1].error_ms / static_cast<double>(m.hops[1].passes));
  CHECK(per_pass(m.hops[0]) < 50.0);
  CHECK(per_pass(m.hops[2]) < 50.0);
  // The all-hops total carries the delay too.
  CHECK(m.network_ms / static_cast<double>(m.passes) >= 100.0 - 1.0);
}
