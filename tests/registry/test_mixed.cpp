// Mixed topology: a YAML node list with an `auto` entry. Parsing, plan_around (pinned ranges
// planned around), and a real cluster: one worker pinned to layers 0-1 that does not join, two
// that --join and get the rest; generation equal to one process, before and after a re-plan.
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <chrono>
#include <memory>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/ports.h"
#include "engine/base/error.h"
#include "engine/cluster/cluster_config.h"
#include "engine/registry/dynamic_cluster.h"
#include "engine/cluster/planner.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/local_model.h"
#include "fixtures.h"
#include "pipeline/worker_process.h"
#include "registry/registry_helpers.h"

using namespace baton;
using namespace baton::registry;

namespace {

using baton::test::generate_tokens;
using baton::test::kMiB;
using baton::test::no_headroom;

using namespace std::chrono_literals;

ModelFootprint footprint(int64_t n_layer) {
  ModelFootprint m;
  m.model_identity = "model-a";
  m.n_layer = n_layer;
  m.layer_bytes.assign(static_cast<size_t>(n_layer), 10 * kMiB);
  m.n_ctx = 512;
  return m;
}

NodeRecord record_of(const std::string& id, uint64_t free_mib, float speed, uint32_t first = 0, uint32_t last = 1000) {
  NodeRecord r;
  r.node_id = id;
  r.host = "10.0.0.1";
  r.port = 9000;
  r.memory_total = r.memory_free = free_mib * kMiB;
  r.layers = {{first, last}};
  r.model_identity = "model-a";
  r.speed = speed;
  return r;
}

PlannedStage pin(const std::string& id, int64_t first, int64_t last) {
  NodeRecord r = record_of(id, 0, 0);
  set_served_layers(r, {first, last});
  return planned_stage(r, {first, last});
}

}  // namespace

TEST_CASE("mixed topology: a node list with `auto` parses into fixed nodes + dynamic membership", "[registry]") {
  auto c = baton::parse_cluster_config(
      "model: m.gguf\ncluster:\n  insecure: true\n  min_nodes: 2\n  nodes:\n"
      "    - { id: big, host: 10.0.0.11, port: 8010, layers: [0, 1] }\n"
      "    - { id: w2, host: 10.0.0.12, port: 8010 }\n"
      "    - auto\n",
      "mixed.yaml", "/");
  CHECK(c.nodes_auto);
  REQUIRE(c.nodes.size() == 2);
  CHECK(c.nodes[0].layers == baton::LayerSpan::from_inclusive(0, 1));
  CHECK(!c.nodes[1].layers);
  CHECK(c.min_nodes == 2);
  CHECK_THROWS_WITH(baton::parse_cluster_config(
                        "model: m\ncluster:\n  insecure: true\n  nodes:\n    - auto\n    - auto\n", "c.yaml", "/"),
                    Catch::Contains("c.yaml:6: cluster.nodes lists `auto` twice"));
  CHECK_THROWS_WITH(
      baton::parse_cluster_config("model: m\ncluster:\n  insecure: true\n  nodes:\n    - auto\n", "c.yaml", "/"),
      Catch::Contains("cluster.nodes lists only `auto`: write `nodes: auto`"));
}

TEST_CASE("mixed topology: plan_around keeps pinned ranges and plans the gaps over the other nodes", "[registry]") {
  const auto m = footprint(10);
  // Pinned in the middle: [0,3) and [7,10) planned over three nodes, each in one gap.
  auto plan =
      plan_around({pin("big", 3, 7)}, {record_of("a", 1000, 10), record_of("b", 1000, 10), record_of("c", 1000, 10)}, m,
                  no_headroom());
  REQUIRE(plan.size() == 4);
  int64_t next = 0;
  for (const auto& p : plan) {
    CHECK(p.stage.layers.begin == next);
    next = p.stage.layers.end;
  }
  CHECK(next == 10);
  auto big = std::find_if(plan.begin(), plan.end(), [](const PlannedStage& p) { return p.record.node_id == "big"; });
  REQUIRE(big != plan.end());
  CHECK(big->stage.layers.begin == 3);
  CHECK(big->stage.layers.end == 7);
  CHECK(big->bytes_needed == 40 * kMiB);
  // Pinned at the start; the rest in proportion to speed.
  plan = plan_around({pin("big", 0, 4)}, {record_of("a", 1000, 10), record_of("b", 1000, 20)}, m, no_headroom());
  REQUIRE(plan.size() == 3);
  CHECK(plan[0].record.node_id == "big");
  CHECK(plan[1].stage.layers.begin == 4);
  CHECK(plan[1].stage.layers.end == 6);  // 6 layers at 10:20 -> 2 + 4
  CHECK(plan[2].stage.layers.end == 10);
  // A pinned node listed among the others too is not planned twice.
  plan = plan_around({pin("a", 0, 5)}, {record_of("a", 1000, 10), record_of("b", 1000, 10)}, m, no_headroom());
  REQUIRE(plan.size() == 2);
  CHECK(plan[1].record.node_id == "b");
  CHECK(plan[1].stage.layers.begin == 5);
  // Errors name the gap or the pinned nodes.
  CHECK_THROWS_WITH(plan_around({pin("big", 0, 4)}, {record_of("a", 15, 10)}, m, no_headroom()),
                    Catch::Contains("layers 4-9 (around the pinned nodes)") && Catch::Contains("missing"));
  CHECK_THROWS_WITH(plan_around({pin("x", 0, 4), pin("y", 3, 6)}, {record_of("a", 1000, 10)}, m, no_headroom()),
                    Catch::Contains("x (layers 0-3) and y (layers 3-5) are pinned to overlapping layers"));
  CHECK_THROWS_WITH(plan_around({pin("x", 8, 12)}, {}, m, no_headroom()),
                    Catch::Contains("node x is pinned to layers 8-11, outside the model's 0-9"));
}

TEST_CASE("mixed topology: a pinned worker (not joined) and joined workers serve like one process", "[registry]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  const uint16_t port = baton::test::free_loopback_port();
  baton::test::WorkerProcess fixed("big", model, {"--insecure"});
  auto join = [&](const std::string& id) {
    return std::make_unique<baton::test::WorkerProcess>(
        id, model,
        std::vector<std::string>{"--insecure", "--join", fmt::format("127.0.0.1:{}", port), "--heartbeat-ms", "200",
                                 "--speed", "10"});
  };
  auto w1 = join("w1"), w2 = join("w2");
  auto config = baton::parse_cluster_config(
      fmt::format("model: {}\ncluster:\n  insecure: true\n  min_nodes: 3\n  join_timeout: 10\n  heartbeat_timeout: 1\n"
                  "  registry_file: {}/mixed-nodes.json\n  nodes:\n"
                  "    - {{ id: big, host: 127.0.0.1, port: {}, layers: [0, 1] }}\n    - auto\n",
                  model, baton::test::temp_dir(), fixed.port()),
      "mixed.yaml", "/");
  config.control_port = port;
  DynamicClusterOptions o;
  o.cluster.threads = 1;
  o.cluster.n_ctx = 128;
  DynamicCluster dc(config, o);
  dc.start();
  auto plan = dc.plan();
  INFO(dc.plan_table());
  REQUIRE(plan.size() == 3);
  CHECK(plan[0].record.node_id == "big");
  CHECK(plan[0].stage.layers.begin == 0);
  CHECK(plan[0].stage.layers.end == 2);
  CHECK(plan[1].stage.layers.begin == 2);
  CHECK(plan[2].stage.layers.end == 5);
  auto snap = dc.snapshot();
  CHECK(snap.ready);
  REQUIRE(snap.nodes.size() == 4);
  CHECK(snap.nodes[1].id == "big");
  CHECK(snap.nodes[1].status == "online");

  baton::LocalModelOptions lo;
  lo.threads = 1;
  lo.n_ctx = 128;
  baton::LocalModel local(model, lo);
  const auto want = generate_tokens(local.layers(), local.head(), local.tokenizer());
  CHECK(generate_tokens(dc.layers(), dc.head(), dc.tokenizer()) == want);

  // A joined worker dies: re-planned around the pinned range over the one that remains.
  w2->kill_now();
  const auto t0 = std::chrono::steady_clock::now();
  while (!dc.lost_planned_node() && std::chrono::steady_clock::now() - t0 < 3s) std::this_thread::sleep_for(10ms);
  REQUIRE(dc.lost_planned_node());
  CHECK(dc.replan());
  plan = dc.plan();
  REQUIRE(plan.size() == 2);
  CHECK(plan[0].record.node_id == "big");
  CHECK(plan[0].stage.layers.end == 2);
  CHECK(plan[1].record.node_id == "w1");
  CHECK(plan[1].stage.layers.begin == 2);
  CHECK(plan[1].stage.layers.end == 5);
  CHECK(dc.snapshot().ready);
  CHECK(generate_tokens(dc.layers(), dc.head(), dc.tokenizer()) == want);
}
