// docs/DEPLOY.md's path as processes: every worker started with one identical command line
// (`--host 0.0.0.0 --join COORDINATOR:CONTROL`, only the node id differs, as the host name does
// on laptops) joins a `nodes: auto` engine-coordinator, advertises the address the coordinator
// can dial (its route to the coordinator, not 0.0.0.0), and the cluster serves a completion.
#include <catch2/catch.hpp>
#include <fmt/core.h>
#include <httplib.h>

#include <chrono>
#include <fstream>
#include <memory>

#include "fixtures.h"
#include "support/ports.h"
#include "support/process.h"

namespace {

using namespace std::chrono_literals;

}  // namespace

TEST_CASE("workers with one identical --host 0.0.0.0 --join command line advertise a dialable address and serve") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  const std::string bin = baton::test::binary_dir() + "/bin/";
  const std::string dir = baton::test::temp_dir();
  const uint16_t http = baton::test::free_loopback_ports(2);  // HTTP and control = HTTP + 1
  std::vector<std::unique_ptr<baton::test::Process>> workers;
  std::vector<std::string> ports;
  for (const char* id : {"laptop-1", "laptop-2"}) {
    workers.push_back(std::make_unique<baton::test::Process>(
        std::vector<std::string>{bin + "engine-worker", "--node-id", id, "--host", "0.0.0.0", "--port", "0", "--model",
                                 model, "--insecure", "--join", fmt::format("127.0.0.1:{}", http + 1), "--speed", "10"},
        baton::test::ProcessOptions{.stderr_path = dir + "/" + id + ".log"}));
    const auto line = workers.back()->wait_for_line("listening on 0.0.0.0:", 30s);
    REQUIRE(line);
    ports.push_back(line->substr(line->rfind(':') + 1));
  }
  const std::string yaml = dir + "/auto.yaml";
  std::ofstream(yaml) << fmt::format(
      "model: {}\ncluster:\n  master: {{ host: 127.0.0.1, port: {} }}\n  insecure: true\n  nodes: auto\n"
      "  min_nodes: 2\n  join_timeout: 30\n",
      model, http);
  baton::test::Process coordinator(
      {bin + "engine-coordinator", "--config", yaml, "-t", "1", "--slots", "1", "-c", "128"},
      {.stderr_path = dir + "/coordinator.log"});
  const bool listening = coordinator.wait_for_output("listening on http://", 60s);
  INFO(coordinator.error_output());
  REQUIRE(listening);

  const auto status =
      baton::test::run_shell(fmt::format("{}engine-ctl status --coordinator 127.0.0.1:{} 2>&1", bin, http));
  INFO(status.out);
  CHECK(status.status == 0);
  // Before: the workers announced --host, "0.0.0.0:PORT", an address no other machine can dial.
  CHECK_THAT(status.out, Catch::Contains(fmt::format("| laptop-1 | 127.0.0.1:{} | online |", ports[0])) &&
                             Catch::Contains(fmt::format("| laptop-2 | 127.0.0.1:{} | online |", ports[1])));
  std::ifstream log(dir + "/laptop-1.log");
  const std::string worker_log((std::istreambuf_iterator<char>(log)), {});
  CHECK_THAT(worker_log, Catch::Contains("advertising 127.0.0.1"));

  httplib::Client client("127.0.0.1", http);
  client.set_read_timeout(60, 0);
  const auto res = client.Post(
      "/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0})", "application/json");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(coordinator.terminate(5000ms) == 0);
  for (auto& w : workers) CHECK(w->terminate() == 0);
}
