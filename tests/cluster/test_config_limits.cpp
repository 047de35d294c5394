// The cluster YAML's bounds (issue 24, defects 5 and 9): every duration in a sane finite range,
// a size cap checked before parsing, a node count cap, node ids and hosts that are printable
// UTF-8 of bounded length, and a malformed registry URL. The same rules run in
// engine-ctl doctor (tests/registry/test_config_processes.cpp).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <fstream>

#include "engine/base/error.h"
#include "engine/cluster/cluster_config.h"
#include "engine/cluster/config_limits.h"
#include "fixtures.h"

using namespace baton;

namespace {

std::string config_error(const std::string& text) {
  try {
    parse_cluster_config(text, "cluster.yaml", "/etc/baton");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A valid nodes: auto config with `extra` appended to the cluster mapping.
std::string with_cluster_line(const std::string& extra) {
  return "model: m.gguf\ncluster:\n  insecure: true\n  nodes: auto\n  " + extra + "\n";
}

std::string with_node(const std::string& id) {
  return "model: m.gguf\ncluster:\n  insecure: true\n  nodes:\n    - { id: " + id +
         ", host: 10.0.0.1, port: 8010, layers: [0, 1] }\n";
}

}  // namespace

TEST_CASE("every duration in the cluster YAML is refused outside its range, naming the line and the field") {
  for (const char* key : {"heartbeat_timeout", "join_timeout", "load_timeout", "connect_timeout"}) {
    for (const char* value : {"1e300", "1e-300", ".nan", ".inf", "-.inf", "-1", "0"}) {
      const std::string err = config_error(with_cluster_line(fmt::format("{}: {}", key, value)));
      INFO(key << ": " << value << " -> " << err);
      CHECK_THAT(
          err, Catch::StartsWith("cluster.yaml:5: cluster." + std::string(key) + " must be a number of seconds from"));
    }
    CHECK(config_error(with_cluster_line(fmt::format("{}: 30", key))).empty());
  }
  CHECK(config_error(with_cluster_line("heartbeat_timeout: 2.5")).empty());
  CHECK_THAT(config_error(with_cluster_line("heartbeat_timeout: 7200")),
             Catch::Contains("from 0.1 to 3600, found 7200"));
}

TEST_CASE("a malformed registry URL is refused with the registry's own rules") {
  CHECK_THAT(config_error(with_cluster_line("registry: etcd://:x/../")),
             Catch::Contains("cluster.yaml:5: cluster.registry:"));
  CHECK_THAT(config_error(with_cluster_line("registry: etcd://h:2379/a/../b")), Catch::Contains("'..' path segment"));
  CHECK_THAT(config_error(with_cluster_line("registry: http://h:2379")), Catch::Contains("scheme"));
  CHECK(config_error(with_cluster_line("registry: etcd://127.0.0.1:2379/baton")).empty());
}

TEST_CASE("node ids must be printable UTF-8 of bounded length") {
  CHECK_THAT(config_error(with_node("\"a\\0b\"")),
             Catch::Contains("cluster.nodes[0].id has a space or control character"));
  CHECK_THAT(config_error(with_node("\"a\\nregistry event=offline node=b\"")), Catch::Contains("control character"));
  CHECK_THAT(config_error(with_node("\"a\\tb\"")), Catch::Contains("control character"));
  // Raw bytes (a YAML "\\xff" escape is the character U+00FF, valid UTF-8).
  CHECK_THAT(config_error(with_node("\"a\xc3\x28\"")), Catch::Contains("cluster.yaml:5:"));
  CHECK_THAT(config_error(with_node("\"\\x85\"")), Catch::Contains("cluster.nodes[0].id"));  // U+0085, a C1 control
  CHECK_THAT(config_error(with_node(std::string(kMaxNodeIdBytes + 1, 'a'))),
             Catch::Contains("more than the 128 allowed"));
  CHECK_THAT(config_error(with_node("\"\"")), Catch::Contains("must not be empty"));
  CHECK(config_error(with_node("node-01")).empty());
  CHECK(config_error(with_node("\"nœud-é\"")).empty());
  CHECK(config_error(with_node(std::string(kMaxNodeIdBytes, 'a'))).empty());
  // Hosts too: no control characters.
  CHECK_THAT(
      config_error(
          "model: m.gguf\ncluster:\n  insecure: true\n  nodes:\n    - { id: a, host: \"10.0.0.1\\n\", port: 8010 }\n"),
      Catch::Contains("cluster.nodes[0].host has a space or control character"));
}

TEST_CASE("a huge cluster YAML is refused by its size before parsing, and the node count is capped") {
  std::string many = "model: m.gguf\ncluster:\n  insecure: true\n  nodes:\n";
  for (size_t i = 0; i <= kMaxClusterNodes; ++i)
    many += fmt::format("    - {{ id: n{}, host: h, port: {} }}\n", i, 1000 + i);
  REQUIRE(many.size() < kMaxClusterConfigBytes);
  CHECK_THAT(config_error(many),
             Catch::Contains("cluster.yaml:5: cluster.nodes lists 1025 nodes, more than the 1024 allowed"));

  std::string huge = many + "# " + std::string(kMaxClusterConfigBytes, 'x') + "\n";
  CHECK_THAT(config_error(huge), Catch::Contains("more than the 1048576 a cluster config may have"));
  const std::string path = baton::test::temp_dir() + "/huge.yaml";
  std::ofstream(path) << huge;
  CHECK_THROWS_WITH(parse_cluster_config_file(path),
                    Catch::Contains("more than the 1048576 a cluster config may have"));
}

// Issue 29, defect 5: a registry next to a fixed node list was silently ignored.
TEST_CASE("cluster.registry with a fixed node list is refused, naming the line and what to do") {
  const std::string fixed =
      "model: m.gguf\ncluster:\n  insecure: true\n  registry: etcd://127.0.0.1:2379/baton\n"
      "  nodes:\n    - { id: a, host: 10.0.0.1, port: 8010, layers: [0, 1] }\n";
  const std::string err = config_error(fixed);
  CHECK_THAT(err, Catch::StartsWith("cluster.yaml:4: cluster.registry is only used to find workers that join"));
  CHECK_THAT(err, Catch::Contains("add `auto`"));
  const std::string mixed =
      "model: m.gguf\ncluster:\n  insecure: true\n  registry: etcd://127.0.0.1:2379/baton\n"
      "  nodes:\n    - { id: a, host: 10.0.0.1, port: 8010, layers: [0, 1] }\n    - auto\n";
  CHECK(config_error(mixed).empty());
}
