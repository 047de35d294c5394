// Node records are checked field by field wherever they come from (issue 24, defects 5, 8, 9):
// a real engine-worker announcing 3e38 GFLOP/s is refused, not listed and not persisted; the
// registry file's absurd records are skipped; engine-ctl doctor and engine-coordinator refuse
// the YAML durations and ids that parse_cluster_config refuses (one shared parser).
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/base/error.h"
#include "engine/cluster/cluster_config.h"
#include "engine/registry/dynamic_cluster.h"
#include "engine/registry/node_record_check.h"
#include "engine/registry/node_registry.h"
#include "fixtures.h"
#include "pipeline/worker_process.h"
#include "support/ports.h"
#include "support/process.h"

namespace {

using namespace std::chrono_literals;
using baton::registry::NodeRecord;
using baton::test::WorkerProcess;

std::string secret_file() {
  static int n = 0;
  std::string path = baton::test::temp_dir() + "/limits-secret-" + std::to_string(n++);
  std::ofstream(path) << "record limits secret\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  return path;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

NodeRecord good_record(const std::string& id) {
  NodeRecord r;
  r.node_id = id;
  r.host = "127.0.0.1";
  r.port = 9100;
  r.memory_total = 1 << 30;
  r.memory_free = 1 << 29;
  r.threads = 2;
  r.isa = "avx2";
  r.layers = {{0, 4}};
  r.model_identity = "0123456789abcdef0123456789abcdef";
  r.speed = 10;
  return r;
}

std::string refusal(const NodeRecord& r, int64_t n_layer = 5) {
  try {
    baton::registry::check_node_record(r, n_layer, "test");
  } catch (const baton::Error& e) {
    return e.what();
  }
  return "";
}

baton::test::ShellResult run_command(const std::string& command) { return baton::test::run_shell(command + " 2>&1"); }

std::string limits_yaml(const std::string& name, const std::string& text) {
  const std::string path = baton::test::temp_dir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("registry: an engine-worker announcing 3e38 GFLOP/s is refused, never listed nor persisted", "[registry]") {
  const std::string secret = secret_file();
  const std::string file = baton::test::temp_dir() + "/nodes-limits.json";
  std::filesystem::remove(file);
  const uint16_t port = baton::test::free_loopback_port();
  auto config = baton::parse_cluster_config(
      fmt::format("model: {}\ncluster:\n  secret_file: {}\n  nodes: auto\n  join_timeout: 10\n  registry_file: {}\n",
                  baton::test::shared_path("models/stories260K.gguf"), secret, file),
      "limits.yaml", "/");
  config.control_port = port;
  baton::registry::DynamicClusterOptions o;
  o.cluster.threads = 1;
  o.cluster.n_ctx = 128;
  baton::registry::DynamicCluster dc(config, o);
  auto join = [&](const std::string& id, const std::string& speed) {
    return std::make_unique<WorkerProcess>(
        id, baton::test::shared_path("models/stories260K.gguf"),
        std::vector<std::string>{"--secret-file", secret, "--join", fmt::format("127.0.0.1:{}", port), "--heartbeat-ms",
                                 "200", "--speed", speed});
  };
  auto absurd = join("absurd", "3e38");
  auto fine = join("fine", "10");
  CHECK(WorkerProcess::eventually_contains(*absurd, "lost the coordinator"));
  CHECK(WorkerProcess::eventually_contains(*fine, "registered with"));
  for (int i = 0; i < 100 && !dc.registry().find("fine"); ++i) std::this_thread::sleep_for(50ms);
  std::this_thread::sleep_for(300ms);
  CHECK(dc.registry().find("fine"));
  CHECK(!dc.registry().find("absurd"));
  CHECK(file_text(file).find("absurd") == std::string::npos);
}

TEST_CASE("registry: records are checked field by field: layers, memory, speed, load, ids") {
  CHECK(refusal(good_record("w1")).empty());
  auto r = good_record("w1");
  r.layers = {{0, 5}};
  CHECK_THAT(refusal(r), Catch::Contains("layers[0] [0, 5] goes beyond the model's layers 0..4"));
  r = good_record("w1");
  r.memory_total = r.memory_free = uint64_t{1} << 63;
  CHECK_THAT(refusal(r), Catch::Contains("memory_total 9223372036854775808 bytes is more than"));
  r = good_record("w1");
  r.memory_free = r.memory_total + 1;
  CHECK_THAT(refusal(r), Catch::Contains("memory_free"));
  r = good_record("w1");
  r.speed = 3e38f;
  CHECK_THAT(refusal(r), Catch::Contains("speed must be finite, from 0 to"));
  r = good_record("w1");
  r.load = std::numeric_limits<float>::infinity();
  CHECK_THAT(refusal(r), Catch::Contains("load must be finite"));
  CHECK_THAT(refusal(good_record(std::string("a\0b", 3))), Catch::Contains("node_id has a space or control character"));
  CHECK_THAT(refusal(good_record("a\nregistry event=offline")), Catch::Contains("control character"));
  CHECK_THAT(refusal(good_record("\xc3\x28")), Catch::Contains("not valid UTF-8"));
  CHECK_THAT(refusal(good_record(std::string(10 << 20, 'a'))), Catch::Contains("more than the 128 allowed"));

  // The registry refuses it on registration, and skips it in its file.
  const std::string path = baton::test::temp_dir() + "/limits-reg.json";
  std::filesystem::remove(path);
  baton::registry::NodeRegistryOptions ro{std::chrono::milliseconds(3000), path, 5};
  {
    baton::registry::NodeRegistry reg(ro);
    r = good_record("huge");
    r.layers = {{0, 40}};
    CHECK_THROWS_WITH(reg.register_node(r, 1), Catch::Contains("goes beyond the model's layers"));
    CHECK(!reg.find("huge"));
    reg.register_node(good_record("ok"), 2);
  }
  std::string text = file_text(path);
  REQUIRE(text.find("\"ok\"") != std::string::npos);
  CHECK(text.find("huge") == std::string::npos);
  const auto at = text.find("\"speed\":");
  REQUIRE(at != std::string::npos);
  const auto end = text.find_first_of(",}", at);
  text.replace(at, end - at, "\"speed\":3e38");
  std::ofstream(path) << text;
  baton::registry::NodeRegistry again(ro);
  CHECK(!again.find("ok"));
}

TEST_CASE("engine-ctl doctor and engine-coordinator refuse absurd durations, ids and registry URLs", "[registry]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  const std::string bin = baton::test::binary_dir() + "/bin/";
  for (const char* line : {"heartbeat_timeout: 1e300", "join_timeout: .nan", "load_timeout: -1",
                           "connect_timeout: .inf", "registry: etcd://:x/../"}) {
    const std::string yaml = limits_yaml(
        "limits.yaml", fmt::format("model: {}\ncluster:\n  insecure: true\n  nodes: auto\n  {}\n", model, line));
    auto doctor = run_command(bin + "engine-ctl doctor " + yaml);
    INFO(line << "\n" << doctor.out);
    CHECK(doctor.status != 0);
    CHECK(doctor.out.find("limits.yaml:5: cluster.") != std::string::npos);
    auto coordinator = run_command(bin + "engine-coordinator --port 0 --config " + yaml);
    INFO(coordinator.out);
    CHECK(coordinator.status != 0);
    CHECK(coordinator.out.find("limits.yaml:5: cluster.") != std::string::npos);
  }
  const std::string bad_id = limits_yaml(
      "bad-id.yaml",
      fmt::format("model: {}\ncluster:\n  insecure: true\n  nodes:\n    - {{ id: \"a\\nb\", host: h, port: 1 }}\n",
                  model));
  auto doctor = run_command(bin + "engine-ctl doctor " + bad_id);
  INFO(doctor.out);
  CHECK(doctor.status != 0);
  CHECK(doctor.out.find("bad-id.yaml:5: cluster.nodes[0].id has a space or control character") != std::string::npos);
}
