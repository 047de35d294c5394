// engine-ctl as a process: doctor on YAMLs with a reachable worker and an unreachable port,
// wrong layer coverage and a missing model; status against an HTTP endpoint serving the
// GET /v1/cluster shape of engine/api (fields of api::NodeView) and against nothing.
#include <catch2/catch.hpp>
#include <fmt/core.h>
#include <httplib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <thread>

#include "support/ports.h"
#include "fixtures.h"
#include "pipeline/worker_process.h"
#include "support/process.h"

namespace {

using Run = baton::test::ShellResult;

Run run(const std::string& args) {
  return baton::test::run_shell(baton::test::binary_dir() + "/bin/engine-ctl " + args + " 2>&1");
}

std::string write_yaml(const std::string& name, const std::string& text) {
  const std::string path = baton::test::temp_dir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string yaml(const std::string& model, uint16_t port_a, uint16_t port_b, const std::string& layers_b = "[3, 4]") {
  return fmt::format(
      "model: {}\ncluster:\n  insecure: true\n  nodes:\n"
      "    - {{ id: a, host: 127.0.0.1, port: {}, layers: [0, 2] }}\n"
      "    - {{ id: b, host: 127.0.0.1, port: {}, layers: {} }}\n",
      model, port_a, port_b, layers_b);
}

}  // namespace

TEST_CASE("engine-ctl doctor: reachability like nc -zv, coverage, memory fit, exit code", "[registry]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  baton::test::WorkerProcess a("a", model, {"--insecure"}), b("b", model, {"--insecure"});

  auto good = run("doctor " + write_yaml("good.yaml", yaml(model, a.port(), b.port())) + " --ctx 256 --slots 2");
  INFO(good.out);
  CHECK(good.status == 0);
  CHECK(good.out.find(fmt::format("ok    node a 127.0.0.1:{}: port open", a.port())) != std::string::npos);
  CHECK(good.out.find("layers 0-4 covered exactly once by 2 node(s)") != std::string::npos);
  CHECK(good.out.find("ok    memory fit: this machine (2 local node(s))") != std::string::npos);
  CHECK(good.out.find("all checks passed") != std::string::npos);

  const baton::test::RefusingPort refusing;
  const uint16_t dead = refusing.port();
  auto bad = run("doctor " + write_yaml("dead.yaml", yaml(model, a.port(), dead)));
  INFO(bad.out);
  CHECK(bad.status == 1);
  CHECK(bad.out.find(fmt::format("FAIL  node b 127.0.0.1:{}: port not reachable: Connection refused", dead)) !=
        std::string::npos);
  CHECK(bad.out.find("1 check(s) failed") != std::string::npos);

  auto gap = run("doctor " + write_yaml("gap.yaml", yaml(model, a.port(), b.port(), "[4, 4]")));
  INFO(gap.out);
  CHECK(gap.status == 1);
  CHECK(gap.out.find("FAIL  layer coverage:") != std::string::npos);
  CHECK(gap.out.find("layer 3 (after node a (layers 0-2), before node b (layers 4-4)) is not assigned to any node") !=
        std::string::npos);

  // The handshake (issue 29): the port being open was "all checks passed" even with a wrong secret.
  CHECK(good.out.find(fmt::format("ok    node a (127.0.0.1:{}): handshake ok (protocol", a.port())) !=
        std::string::npos);
  CHECK(good.out.find(fmt::format("ok    node b (127.0.0.1:{}): same model", b.port())) != std::string::npos);

  auto missing = run("doctor " + write_yaml("missing.yaml", yaml("/nonexistent/model.gguf", a.port(), b.port())));
  INFO(missing.out);
  CHECK(missing.status == 1);
  CHECK(missing.out.find("FAIL  model /nonexistent/model.gguf") != std::string::npos);
}

TEST_CASE("engine-ctl status: prints the cluster table of GET /v1/cluster, exit 1 when not ready or unreachable",
          "[registry]") {
  httplib::Server server;
  std::atomic<bool> ready{true};
  server.Get("/v1/cluster", [&](const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("Authorization") != "Bearer k1") {
      res.status = 401;
      res.set_content(R"({"error":{"message":"bad key"}})", "application/json");
      return;
    }
    res.set_content(fmt::format(R"({{"ready": {}, "layers_covered": {}, "n_layer": 5, "detail": "{}", "nodes": [
      {{"id": "coordinator", "address": "127.0.0.1:8021", "role": "coordinator", "status": "online", "load": 0,
        "memory_total_bytes": 0, "memory_used_bytes": 0, "compute_ms_per_token": 0, "layers": null,
        "last_heartbeat_seconds": null}},
      {{"id": "w1", "address": "127.0.0.1:9001", "role": "worker", "status": "online", "load": 0.25,
        "memory_total_bytes": 17179869184, "memory_used_bytes": 70000000, "compute_ms_per_token": 0.5,
        "layers": [0, 2], "last_heartbeat_seconds": 0.4}},
      {{"id": "w2", "address": "127.0.0.1:9002", "role": "worker", "status": "{}", "load": 0,
        "memory_total_bytes": 17179869184, "memory_used_bytes": 69000000, "compute_ms_per_token": 0,
        "layers": [3, 4], "last_heartbeat_seconds": 3.5}}]}})",
                                ready.load(), ready.load(), ready ? "" : "node w2 (layers 3-4) is offline",
                                ready ? "online" : "offline"),
                    "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });

  auto ok = run(fmt::format("status --coordinator 127.0.0.1:{} --api-key k1", port));
  INFO(ok.out);
  CHECK(ok.status == 0);
  CHECK(ok.out.find("ready, layers covered, 5 layers") != std::string::npos);
  CHECK(ok.out.find("| w1 | 127.0.0.1:9001 | online | 0-2 | 66.8 MiB / 16.00 GiB | 25% | 0.4 s ago | worker |") !=
        std::string::npos);

  ready = false;
  auto down = run(fmt::format("status --coordinator 127.0.0.1:{} --api-key k1", port));
  INFO(down.out);
  CHECK(down.status == 1);
  CHECK(down.out.find("NOT READY") != std::string::npos);
  CHECK(down.out.find("detail: node w2 (layers 3-4) is offline") != std::string::npos);
  CHECK(down.out.find("| w2 | 127.0.0.1:9002 | offline | 3-4 |") != std::string::npos);

  auto unauthorized = run(fmt::format("status --coordinator 127.0.0.1:{}", port));
  CHECK(unauthorized.status == 1);
  CHECK(unauthorized.out.find("answered 401") != std::string::npos);

  server.stop();
  t.join();
  auto gone = run(fmt::format("status --coordinator 127.0.0.1:{} --timeout 1", port));
  CHECK(gone.status == 1);
  CHECK(gone.out.find("cannot reach the coordinator") != std::string::npos);
}

// Issue 29: engine-ctl doctor only opened the TCP port, so a wrong secret or another model was "all
// checks passed"; a wrong secret was reported as "did not answer within 5 s" after 20 ms.
TEST_CASE("engine-ctl doctor: a wrong secret and another model are FAILs named as such", "[registry]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  // Another model the engine can open (4 layers: node b's [3, 4] also exceeds its file).
  const std::string other = baton::test::shared_path("models/synthetic/tl256-F16.gguf");
  const std::string dir = baton::test::temp_dir();
  std::ofstream(dir + "/right.secret") << "the right secret for doctor";
  std::ofstream(dir + "/wrong.secret") << "a wrong secret for the doctor";
  ::chmod((dir + "/right.secret").c_str(), 0600);
  ::chmod((dir + "/wrong.secret").c_str(), 0600);
  baton::test::WorkerProcess a("a", model, {"--secret-file", dir + "/right.secret"});
  baton::test::WorkerProcess b("b", other, {"--secret-file", dir + "/right.secret"});
  auto config = [&](const std::string& secret) {
    return fmt::format(
        "model: {}\ncluster:\n  secret_file: {}\n  nodes:\n"
        "    - {{ id: a, host: 127.0.0.1, port: {}, layers: [0, 2] }}\n"
        "    - {{ id: b, host: 127.0.0.1, port: {}, layers: [3, 4] }}\n",
        model, secret, a.port(), b.port());
  };
  auto wrong = run("doctor " + write_yaml("wrong-secret.yaml", config(dir + "/wrong.secret")));
  INFO(wrong.out);
  CHECK(wrong.status == 1);
  CHECK(wrong.out.find(fmt::format("FAIL  node a (127.0.0.1:{}) refused the handshake, check that both use the same "
                                   "cluster secret",
                                   a.port())) != std::string::npos);
  CHECK(wrong.out.find("did not answer") == std::string::npos);
  CHECK(wrong.out.find("all checks passed") == std::string::npos);

  auto mismatch = run("doctor " + write_yaml("other-model.yaml", config(dir + "/right.secret")));
  INFO(mismatch.out);
  CHECK(mismatch.status == 1);
  CHECK(mismatch.out.find(fmt::format("ok    node a (127.0.0.1:{}): same model", a.port())) != std::string::npos);
  CHECK(mismatch.out.find(fmt::format("FAIL  node b (127.0.0.1:{}) has model identity", b.port())) !=
        std::string::npos);
  CHECK(mismatch.out.find(fmt::format("FAIL  node b (127.0.0.1:{}) is given layers 3-4 but its file holds layers 0-3",
                                      b.port())) != std::string::npos);
  CHECK(mismatch.out.find("2 check(s) failed") != std::string::npos);
}
