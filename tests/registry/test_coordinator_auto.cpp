// engine-coordinator (the HTTP server) with `nodes: auto` as a process, workers --join'ing it,
// and engine-ctl status reading its GET /v1/cluster: ready with both nodes; a SIGTERM'd worker
// shows offline and the coordinator re-plans over the other; with none left it is not ready and
// requests get 503; the coordinator exits 0 on SIGTERM.
#include <catch2/catch.hpp>
#include <fmt/core.h>
#include <httplib.h>
#include <sys/wait.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <cstdio>
#include <fstream>
#include <thread>

#include "fixtures.h"
#include "pipeline/worker_process.h"
#include "support/ports.h"
#include "support/process.h"

namespace {

using namespace std::chrono_literals;

baton::test::ShellResult ctl(const std::string& args) {
  return baton::test::run_shell(baton::test::binary_dir() + "/bin/engine-ctl " + args + " 2>&1");
}

}  // namespace

TEST_CASE("engine-coordinator with nodes: auto serves the workers that join, engine-ctl status shows them",
          "[registry]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  const uint16_t http = baton::test::free_loopback_ports(2);  // HTTP and control = HTTP + 1
  const std::string join = fmt::format("127.0.0.1:{}", http + 1);
  auto args = [&](const std::string&) {
    return std::vector<std::string>{"--insecure", "--join", join, "--heartbeat-ms", "200", "--speed", "10"};
  };
  baton::test::WorkerProcess w1("w1", model, args("w1")), w2("w2", model, args("w2"));

  const std::string dir = baton::test::temp_dir();
  const std::string yaml = dir + "/auto.yaml";
  std::ofstream(yaml) << fmt::format(
      "model: {}\ncluster:\n  master: {{ host: 127.0.0.1, port: {} }}\n  insecure: true\n  nodes: auto\n"
      "  min_nodes: 2\n  join_timeout: 20\n  heartbeat_timeout: 1\n",
      model, http);
  baton::test::ProcessOptions po;
  po.stderr_path = dir + "/coordinator.err";
  baton::test::Process coordinator({baton::test::binary_dir() + "/bin/engine-coordinator", "--config", yaml, "-t", "1",
                                    "--slots", "1", "--ctx", "128"},
                                   po);
  auto logs = [&] { return coordinator.output() + coordinator.error_output(); };
  const bool listening = coordinator.wait_for_output("listening on http://", 20s);
  INFO(logs());
  REQUIRE(listening);
  CHECK(logs().find("registry event=serving nodes=2") != std::string::npos);

  auto ready = ctl(fmt::format("status --coordinator 127.0.0.1:{}", http));
  INFO(ready.out);
  CHECK(ready.status == 0);
  CHECK(ready.out.find(fmt::format("| w1 | 127.0.0.1:{} | online |", w1.port())) != std::string::npos);
  CHECK(ready.out.find(fmt::format("| w2 | 127.0.0.1:{} | online |", w2.port())) != std::string::npos);

  httplib::Client client("127.0.0.1", http);
  auto res = client.Post("/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0})",
                         "application/json");
  REQUIRE(res);
  CHECK(res->status == 200);

  // w2 leaves: w1 alone can hold the model, so the coordinator re-plans over it by itself.
  CHECK(w2.terminate() == 0);
  baton::test::ShellResult replanned;
  for (int i = 0; i < 100; ++i) {
    replanned = ctl(fmt::format("status --coordinator 127.0.0.1:{}", http));
    if (replanned.status == 0 && replanned.out.find("| w2 |") != std::string::npos &&
        replanned.out.find(fmt::format("| w2 | 127.0.0.1:{} | offline |", w2.port())) != std::string::npos)
      break;
    std::this_thread::sleep_for(100ms);
  }
  INFO(replanned.out);
  CHECK(replanned.status == 0);
  CHECK(replanned.out.find(fmt::format("| w1 | 127.0.0.1:{} | online | 0-4 |", w1.port())) != std::string::npos);
  CHECK(replanned.out.find(fmt::format("| w2 | 127.0.0.1:{} | offline |", w2.port())) != std::string::npos);
  res = client.Post("/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0})",
                    "application/json");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(logs().find("registry event=re-plan") != std::string::npos);

  // w1 leaves too: nothing can hold the model; /health and requests say so.
  CHECK(w1.terminate() == 0);
  std::this_thread::sleep_for(500ms);
  auto down = ctl(fmt::format("status --coordinator 127.0.0.1:{}", http));
  INFO(down.out);
  CHECK(down.status == 1);
  auto health = client.Get("/health");
  REQUIRE(health);
  CHECK(health->status == 503);
  INFO(health->body);
  CHECK(health->body.find("w1") != std::string::npos);
  res = client.Post("/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0})",
                    "application/json");
  REQUIRE(res);
  CHECK(res->status == 503);

  CHECK(coordinator.terminate(5000ms) == 0);
}

// Issue 29, progress and readiness: the coordinator listens at once and answers 503 "loading" with
// progress while it waits for workers (llama-server answers /health 503 while it loads), logs
// progress lines, and engine-ctl status takes the http:// URL the coordinator prints.
TEST_CASE("engine-coordinator answers /health 503 loading with progress until the cluster serves", "[registry]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  const uint16_t http = baton::test::free_loopback_ports(2);
  const std::string join = fmt::format("127.0.0.1:{}", http + 1);
  const std::vector<std::string> args = {"--insecure", "--join", join, "--heartbeat-ms", "200", "--speed", "10"};
  baton::test::WorkerProcess w1("p1", model, args);
  const std::string dir = baton::test::temp_dir();
  const std::string yaml = dir + "/progress.yaml";
  std::ofstream(yaml) << fmt::format(
      "model: {}\ncluster:\n  master: {{ host: 127.0.0.1, port: {} }}\n  insecure: true\n  nodes: auto\n"
      "  min_nodes: 2\n  join_timeout: 30\n  heartbeat_timeout: 1\n",
      model, http);
  baton::test::ProcessOptions po;
  po.stderr_path = dir + "/progress-coordinator.err";
  baton::test::Process coordinator({baton::test::binary_dir() + "/bin/engine-coordinator", "--config", yaml, "-t", "1",
                                    "--slots", "1", "--ctx", "128"},
                                   po);
  auto logs = [&] { return coordinator.output() + coordinator.error_output(); };
  httplib::Client client("127.0.0.1", http);
  client.set_connection_timeout(1s);
  auto health = client.Get("/health");
  for (int i = 0; i < 100 && !health; ++i) {
    std::this_thread::sleep_for(100ms);
    health = client.Get("/health");
  }
  INFO(logs());
  REQUIRE(health);
  CHECK(health->status == 503);
  auto body = nlohmann::json::parse(health->body);
  for (int i = 0; i < 100 && body["progress"]["phase"] == "starting"; ++i) {  // before the registry opens
    std::this_thread::sleep_for(50ms);
    body = nlohmann::json::parse(client.Get("/health")->body);
  }
  CHECK(body["status"] == "loading");
  CHECK(body["progress"]["phase"] == "joining");
  CHECK(body["progress"]["nodes_wanted"] == 2);
  std::this_thread::sleep_for(1500ms);  // at least one progress line
  CHECK(client.Get("/health")->body.find("\"nodes_registered\":1") != std::string::npos);
  CHECK(logs().find("loading: 1/2 nodes registered") != std::string::npos);
  auto loading = ctl(fmt::format("status --coordinator http://127.0.0.1:{}/", http));
  INFO(loading.out);
  CHECK(loading.status == 1);
  CHECK(loading.out.find("LOADING") != std::string::npos);

  baton::test::WorkerProcess w2("p2", model, args);
  const bool serving = coordinator.wait_for_output("listening on http://", 60s);
  INFO(logs());
  REQUIRE(serving);
  CHECK(client.Get("/health")->status == 200);
  auto ready = ctl(fmt::format("status --coordinator http://127.0.0.1:{}", http));
  INFO(ready.out);
  CHECK(ready.status == 0);
}
