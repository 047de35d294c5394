// Logs and metrics an operator works with, on real processes: --log-level / SPDLOG_LEVEL filter
// the lines, --log-format json writes one parsable object per line (UTC, tool and node id) to
// stderr and --log-file, the coordinator writes one access line per request with its status and
// token counts, and /metrics, /v1/cluster and engine-ctl status show each joined worker's
// readings and an up gauge that drops when a worker is killed.
#include <catch2/catch.hpp>
#include <fmt/core.h>
#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "fixtures.h"
#include "pipeline/worker_process.h"
#include "support/ports.h"
#include "support/process.h"

namespace {

using namespace std::chrono_literals;

std::vector<std::string> ops_log_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

std::string ops_log_file_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The worker's log once it is listening (its start line is logged at info).
std::string ops_worker_log(const std::vector<std::string>& extra) {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  std::vector<std::string> args = {"--insecure"};
  args.insert(args.end(), extra.begin(), extra.end());
  baton::test::WorkerProcess w("lw", model, args);  // returns once its start line is out
  std::this_thread::sleep_for(300ms);
  w.terminate();
  return w.log();
}

struct OpsScopedEnv {
  OpsScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~OpsScopedEnv() { unsetenv(name_); }
  const char* name_;
};

}  // namespace

TEST_CASE("engine-worker log lines carry UTC time, tool and node id, and --log-level and SPDLOG_LEVEL filter them",
          "[registry][logs]") {
  const std::string plain = ops_worker_log({});
  INFO(plain);
  CHECK(plain.find("+00:00 [engine-worker lw] [info] engine-worker lw listening on 127.0.0.1:") != std::string::npos);

  const std::string quiet = ops_worker_log({"--log-level", "warn"});
  INFO(quiet);
  CHECK(quiet.find("[info]") == std::string::npos);
  CHECK(quiet.find("listening") == std::string::npos);

  {
    OpsScopedEnv env("SPDLOG_LEVEL", "error");
    const std::string from_env = ops_worker_log({});
    INFO(from_env);
    CHECK(from_env.find("[info]") == std::string::npos);
    // The flag wins over the environment.
    const std::string flag_wins = ops_worker_log({"--log-level", "info"});
    INFO(flag_wins);
    CHECK(flag_wins.find("[info] engine-worker lw listening") != std::string::npos);
  }

  // A bad level is refused by name.
  auto bad = baton::test::run_shell(baton::test::binary_dir() +
                                    "/bin/engine-worker --node-id x --model m --insecure "
                                    "--log-level loud 2>&1");
  CHECK(bad.status != 0);
  CHECK(bad.out.find("--log-level") != std::string::npos);
}

TEST_CASE("json logs, access lines, per-node readings and the up gauge with two joined workers", "[registry][logs]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  const uint16_t http = baton::test::free_loopback_ports(2);  // HTTP and control = HTTP + 1
  const std::string join = fmt::format("127.0.0.1:{}", http + 1);
  const std::string dir = baton::test::temp_dir();
  const std::string worker_file = dir + "/ops-w1.log";
  std::filesystem::remove(worker_file);
  std::vector<std::string> common = {"--insecure", "--join", join, "--heartbeat-ms", "200", "--speed", "10"};
  auto w1_args = common;
  for (const char* a : {"--log-format", "json", "--log-file"}) w1_args.push_back(a);
  w1_args.push_back(worker_file);
  baton::test::WorkerProcess w1("w1", model, w1_args), w2("w2", model, common);

  const std::string yaml = dir + "/ops-auto.yaml";
  std::ofstream(yaml) << fmt::format(
      "model: {}\ncluster:\n  master: {{ host: 127.0.0.1, port: {} }}\n  insecure: true\n  nodes: auto\n"
      "  min_nodes: 2\n  join_timeout: 20\n  heartbeat_timeout: 1\n",
      model, http);
  const std::string coordinator_file = dir + "/ops-coordinator.log";
  std::filesystem::remove(coordinator_file);
  baton::test::ProcessOptions po;
  po.stderr_path = dir + "/ops-coordinator.err";
  baton::test::Process coordinator(
      {baton::test::binary_dir() + "/bin/engine-coordinator", "--config", yaml, "-t", "1", "--slots", "1", "--ctx",
       "128", "--log-format", "json", "--log-file", coordinator_file},
      po);
  const bool listening = coordinator.wait_for_output("listening on http://", 20s);
  INFO(coordinator.error_output());
  REQUIRE(listening);
  // stdout carries only data: the plan table and the listening line, no log line.
  CHECK(coordinator.output().find("\"level\"") == std::string::npos);

  httplib::Client client("127.0.0.1", http);
  const httplib::Headers with_id = {{"X-Request-Id", "ops-test-1"}};
  auto res = client.Post("/v1/completions", with_id,
                         R"({"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0})", "application/json");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->get_header_value("X-Request-Id") == "ops-test-1");
  const auto usage = nlohmann::json::parse(res->body)["usage"];
  auto bad = client.Post("/v1/completions", R"({"prompt": 7})", "application/json");
  REQUIRE(bad);
  CHECK(bad->status == 400);
  const std::string bad_id = bad->get_header_value("X-Request-Id");
  CHECK(bad_id.starts_with("req-"));

  // Every stderr line is one JSON object with a UTC time, the tool, a level and a message.
  std::vector<nlohmann::json> entries;
  bool access_ok = false, access_bad = false;
  REQUIRE(baton::test::eventually_true(
      [&] { return coordinator.error_output().find("id=" + bad_id) != std::string::npos; }));
  for (const auto& line : ops_log_lines(coordinator.error_output())) {
    INFO(line);
    nlohmann::json j;
    REQUIRE_NOTHROW(j = nlohmann::json::parse(line));
    CHECK(j["tool"] == "engine-coordinator");
    CHECK(j["time"].get<std::string>().ends_with("Z"));
    CHECK(j.contains("level"));
    const std::string msg = j["msg"];
    if (msg.find("access id=ops-test-1 ") != std::string::npos)
      access_ok = msg.find("method=POST path=/v1/completions status=200") != std::string::npos &&
                  msg.find(fmt::format("prompt_tokens={} generated_tokens=4", usage["prompt_tokens"].get<int>())) !=
                      std::string::npos &&
                  msg.find(" ms=") != std::string::npos;
    if (msg.find("access id=" + bad_id + " ") != std::string::npos)
      access_bad = msg.find("path=/v1/completions status=400") != std::string::npos;
  }
  CHECK(access_ok);
  CHECK(access_bad);
  // The file holds the same lines.
  CHECK(ops_log_file_text(coordinator_file).find("access id=ops-test-1 ") != std::string::npos);
  // The worker's json lines name its node.
  const std::string wlog = ops_log_file_text(worker_file);
  INFO(wlog);
  REQUIRE_FALSE(ops_log_lines(wlog).empty());
  for (const auto& line : ops_log_lines(wlog)) {
    const auto j = nlohmann::json::parse(line);
    CHECK(j["tool"] == "engine-worker");
    CHECK(j["node"] == "w1");
  }

  // Readings from the heartbeats: /v1/cluster, /metrics and engine-ctl status.
  auto cluster = client.Get("/v1/cluster");
  REQUIRE(cluster);
  const auto doc = nlohmann::json::parse(cluster->body);
  int with_readings = 0;
  for (const auto& n : doc["nodes"])
    if (n["id"] == "w1" || n["id"] == "w2") {
      INFO(n.dump());
      CHECK(n["readings"]["memory_available_bytes"].get<double>() > 0);
      CHECK(n["readings"]["process_resident_memory_bytes"].get<double>() > 0);
      CHECK(n["readings"]["open_connections"].get<double>() >= 1);  // the control link at least
      CHECK(n["readings"].contains("network_receive_bytes"));
      ++with_readings;
    }
  CHECK(with_readings == 2);

  auto metrics = [&] {
    auto m = client.Get("/metrics");
    return m && m->status == 200 ? m->body : std::string();
  };
  const std::string m = metrics();
  INFO(m);
  CHECK(m.find("baton_node_up{node=\"w1\",role=\"worker\"} 1\n") != std::string::npos);
  CHECK(m.find("baton_node_up{node=\"w2\",role=\"worker\"} 1\n") != std::string::npos);
  CHECK(m.find("baton_build_info{version=\"") != std::string::npos);
  CHECK(m.find(",protocol=\"4\"} 1\n") != std::string::npos);
  CHECK(m.find("\nprocess_resident_memory_bytes ") != std::string::npos);
  CHECK(m.find("\nprocess_cpu_seconds_total ") != std::string::npos);
  CHECK(m.find("\nprocess_open_fds ") != std::string::npos);
  CHECK(m.find("\nprocess_start_time_seconds ") != std::string::npos);
  CHECK(m.find("baton_node_memory_available_bytes{node=\"w1\"} ") != std::string::npos);
  CHECK(m.find("baton_node_memory_available_bytes{node=\"w2\"} ") != std::string::npos);
  CHECK(m.find("baton_node_open_connections{node=\"w2\"} ") != std::string::npos);
  CHECK(m.find("baton_node_network_receive_bytes_total{node=\"w1\"} ") != std::string::npos);

  auto status = baton::test::run_shell(
      fmt::format("{}/bin/engine-ctl status --coordinator 127.0.0.1:{} 2>&1", baton::test::binary_dir(), http));
  INFO(status.out);
  CHECK(status.out.find("| cpu temp | mem available | net rx / tx | connections |") != std::string::npos);
  CHECK(status.out.find(fmt::format("| w1 | 127.0.0.1:{} | online |", w1.port())) != std::string::npos);

  // w2 dies without a word: its up gauge drops to 0 and the coordinator says which node and why.
  w2.kill_now();
  const bool dropped = baton::test::eventually_true(
      [&] { return metrics().find("baton_node_up{node=\"w2\",role=\"worker\"} 0\n") != std::string::npos; }, 15s);
  INFO(metrics());
  CHECK(dropped);
  // w1 reloads the whole model in the re-plan (up 0 while loading), then serves alone.
  CHECK(baton::test::eventually_true(
      [&] { return metrics().find("baton_node_up{node=\"w1\",role=\"worker\"} 1\n") != std::string::npos; }, 15s));
  CHECK(coordinator.error_output().find("registry event=offline node=w2") != std::string::npos);
  CHECK(coordinator.terminate(5000ms) == 0);
}
