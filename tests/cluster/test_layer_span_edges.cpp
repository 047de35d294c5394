// The planner's edges between the half-open LayerSpan and the inclusive ranges people and the
// wire use: a node record's servable layers, and the YAML's `layers: [first, last]`.
#include <catch2/catch.hpp>

#include "engine/cluster/cluster_config.h"
#include "engine/cluster/planner.h"

using namespace baton;

TEST_CASE("layer span edges: a record's inclusive servable layers become a half-open span and back") {
  NodeRecord r;
  CHECK(served_layers(r).empty());
  CHECK_FALSE(serves(r, {0, 1}));
  r.layers = {{2, 5}};  // the wire: layers 2, 3, 4 and 5
  CHECK(served_layers(r) == LayerSpan{2, 6});
  CHECK(serves(r, {2, 6}));
  CHECK(serves(r, {3, 5}));
  CHECK_FALSE(serves(r, {1, 4}));
  CHECK_FALSE(serves(r, {4, 7}));
  set_served_layers(r, {0, 3});
  REQUIRE(r.layers.size() == 1);
  CHECK(r.layers[0].first == 0);
  CHECK(r.layers[0].last == 2);
  CHECK(to_string(served_layers(r)) == "0-2");
}

TEST_CASE("layer span edges: YAML layers [first, last] are a span, and the plan keeps it") {
  const auto c = parse_cluster_config(
      "model: m.gguf\ncluster:\n  insecure: true\n  nodes:\n"
      "    - { id: a, host: h, port: 1, layers: [0, 2] }\n"
      "    - { id: b, host: h, port: 2, layers: [3, 3] }\n",
      "c.yaml", "/");
  REQUIRE(c.nodes.size() == 2);
  CHECK(c.nodes[0].layers == LayerSpan{0, 3});
  CHECK(c.nodes[1].layers == LayerSpan{3, 4});
  const auto plan = plan_layers(c, 4);
  REQUIRE(plan.size() == 2);
  CHECK(plan[0] == StageAssignment{"a", "h", 1, {0, 3}});
  CHECK(plan[1] == StageAssignment{"b", "h", 2, {3, 4}});
  const auto stages = stages_of({planned_stage(NodeRecord{}, {0, 4}, 7)});
  REQUIRE(stages.size() == 1);
  CHECK(stages[0].layers == LayerSpan{0, 4});
}
