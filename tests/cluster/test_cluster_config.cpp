#include <catch2/catch.hpp>

#include "engine/base/error.h"
#include "engine/cluster/cluster_config.h"
#include "engine/cluster/planner.h"

using namespace baton;

namespace {
ClusterConfig parse(const std::string& text) { return parse_cluster_config(text, "cluster.yaml", "/etc/baton"); }

std::string error_of(const std::string& text, int64_t n_layer = 4) {
  try {
    plan_layers(parse(text), n_layer);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const char* kTwoNodes = R"(model: models/m.gguf
cluster:
  master: { host: 127.0.0.1, port: 8021 }
  secret_file: cluster.secret
  nodes:
    - { id: node-01, host: 10.0.0.1, port: 8010, layers: [0, 1], weight: 32 }
    - { id: node-02, host: 10.0.0.2, port: 8010, layers: [2, 3], weight: 32 }
)";
}  // namespace

TEST_CASE("a two-node topology parses, resolves paths and plans the given ranges") {
  auto c = parse(kTwoNodes);
  CHECK(c.model == "/etc/baton/models/m.gguf");
  CHECK(c.secret_file == "/etc/baton/cluster.secret");
  CHECK(c.master_port == 8021);
  CHECK(c.control_port == 8022);
  auto plan = plan_layers(c, 4);
  REQUIRE(plan.size() == 2);
  CHECK(plan[0].layers.begin == 0);
  CHECK(plan[0].layers.end == 2);
  CHECK(plan[1].layers.begin == 2);
  CHECK(plan[1].layers.end == 4);
}

TEST_CASE("a missing layer is named together with the gap") {
  std::string text = kTwoNodes;
  text.replace(text.find("[2, 3]"), 6, "[3, 3]");
  // Issue 29: the nodes around the gap are named ("layers 2 are not assigned" named none).
  CHECK_THAT(error_of(text),
             Catch::Contains("layer 2 (after node node-01 (layers 0-1), before node node-02 (layers 3-3)) is not "
                             "assigned to any node"));
}

TEST_CASE("a doubly assigned layer names both nodes") {
  std::string text = kTwoNodes;
  text.replace(text.find("[2, 3]"), 6, "[1, 3]");
  CHECK_THAT(error_of(text), Catch::Contains("layer 1 is assigned to node-01 and node-02"));
}

TEST_CASE("layers beyond the model are refused naming the node") {
  CHECK_THAT(error_of(kTwoNodes, 3),
             Catch::Contains("node-02 (line 7) has layers [2, 3] but the model has layers 0..2"));
}

TEST_CASE("duplicate ids and addresses are refused with their lines") {
  std::string text = kTwoNodes;
  text.replace(text.find("node-02"), 7, "node-01");
  CHECK_THAT(error_of(text), Catch::Contains("node id 'node-01' is used twice"));
  text = kTwoNodes;
  text.replace(text.find("10.0.0.2"), 8, "10.0.0.1");
  CHECK_THAT(error_of(text), Catch::Contains("address 10.0.0.1:8010, already used on line 6"));
}

TEST_CASE("auto layers split in proportion to weight, contiguous and complete") {
  auto c = parse(R"(model: m.gguf
cluster:
  insecure: true
  nodes:
    - { id: a, host: h, port: 1, layers: auto, weight: 32 }
    - { id: b, host: h, port: 2, layers: auto, weight: 16 }
    - { id: c, host: h, port: 3, weight: 16 }
)");
  auto plan = plan_layers(c, 80);
  REQUIRE(plan.size() == 3);
  CHECK(plan[0].layers.begin == 0);
  CHECK(plan[0].layers.end == 40);
  CHECK(plan[1].layers.end == 60);
  CHECK(plan[2].layers.end == 80);
  // more nodes than layers is refused, every node needs one
  CHECK_THROWS_WITH(plan_layers(c, 2), Catch::Contains("every node needs at least one"));
}

TEST_CASE("type errors name the line and field") {
  CHECK_THROWS_WITH(parse("model: m\ncluster:\n  insecure: true\n  nodes:\n    - { id: a, host: h, port: eighty }\n"),
                    Catch::Contains("cluster.yaml:5: cluster.nodes[0].port must be a port number"));
  CHECK_THROWS_WITH(
      parse("model: m\ncluster:\n  insecure: true\n  nodes:\n    - { id: a, host: h, port: 1, layer: [0,1] }\n"),
      Catch::Contains("unknown field 'layer'"));
  CHECK_THROWS_WITH(parse("model: m\ncluster: {nodes: [], insecure: true\n"), Catch::Contains("invalid YAML"));
  CHECK_THROWS_WITH(parse("model: m\ncluster:\n  nodes: auto\n"), Catch::Contains("secret_file is missing"));
}
