// Failure handling of a `nodes: auto` cluster served over HTTP (ServedModel + HttpServer in this
// process, real engine-worker processes --join'ing it on 127.0.0.1):
//  - kill -9 of a worker mid-generation: the coordinator re-plans over the two that remain and
//    the streamed completion equals the undisturbed one (the client sees a pause);
//  - when the remaining nodes cannot hold the model (--max-memory), /health and requests say
//    so (503 naming the lost node and the memory missing) until a new worker joins.
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/ports.h"
#include "api/api_test_util.h"
#include "engine/api/http_server.h"
#include "engine/api/served_model.h"
#include "engine/cluster/cluster_config.h"
#include "engine/cluster/planner.h"
#include "fixtures.h"
#include "pipeline/worker_process.h"
#include "registry/registry_helpers.h"

namespace {

using baton::test::WorkerProcess;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

using baton::test::kStoriesModel;

std::unique_ptr<WorkerProcess> join(const std::string& id, uint16_t port, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--insecure", "--join", fmt::format("127.0.0.1:{}", port), "--heartbeat-ms", "200",
                                   "--speed",    "10"};
  args.insert(args.end(), extra.begin(), extra.end());
  return std::make_unique<WorkerProcess>(id, baton::test::shared_path(kStoriesModel), args);
}

baton::ClusterConfig failover_config(uint16_t control_port, int min_nodes, const std::string& file) {
  auto c = baton::parse_cluster_config(
      fmt::format("model: {}\ncluster:\n  insecure: true\n  nodes: auto\n  min_nodes: {}\n  join_timeout: 20\n"
                  "  heartbeat_timeout: 1\n  connect_timeout: 5\n  load_timeout: 20\n  registry_file: {}\n",
                  baton::test::shared_path(kStoriesModel), min_nodes, file),
      "failover.yaml", "/");
  c.control_port = control_port;
  return c;
}

struct Served {
  Served(const baton::ClusterConfig& config, int64_t n_ctx, bool fixed_drafts = false) {
    baton::api::ServeOptions so;
    so.scheduler.speculation.adapt = !fixed_drafts;  // drafts whatever the timing: the test must see them
    so.threads = 1;
    so.n_ctx = n_ctx;
    so.scheduler.slots = 2;
    model = baton::api::ServedModel::open_cluster(config, so);
    baton::api::ServerOptions ho;
    ho.port = 0;
    server = std::make_unique<baton::api::HttpServer>(*model, ho);
    server->start();
  }
  int port() const { return server->port(); }
  std::unique_ptr<baton::api::ServedModel> model;
  std::unique_ptr<baton::api::HttpServer> server;
};

struct Streamed {
  int status = 0;
  std::string text;
  std::string finish_reason;
  std::string error;
  double total_ms = 0;  // request sent -> response complete
};

// POSTs a streaming completion and reads it to the end; once `after_events` events have
// arrived, `act` runs once (on this thread, while the server keeps generating).
Streamed stream(int port, const json& body, size_t after_events = 0, const std::function<void()>& act = {}) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw std::runtime_error("cannot connect");
  const std::string payload = body.dump();
  const std::string req = fmt::format(
      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n"
      "Content-Length: {}\r\n\r\n{}",
      payload.size(), payload);
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size()))
    throw std::runtime_error("send");
  std::string raw;
  size_t seen = 0;
  bool acted = false;
  const auto t0 = Clock::now();
  const auto deadline = Clock::now() + 60s;
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
    seen = 0;
    for (size_t pos = 0; (pos = raw.find("data: ", pos)) != std::string::npos; pos += 6) ++seen;
    if (act && !acted && seen >= after_events) {
      act();
      acted = true;
    }
  }
  ::close(fd);
  Streamed s;
  auto r = baton::test::parse_response(raw);
  s.status = r.status;
  s.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  for (const auto& p : baton::test::sse_payloads(r.body)) {
    if (p == "[DONE]") continue;
    auto j = json::parse(p);
    if (j.contains("error")) {
      s.error = j["error"].value("message", "");
      continue;
    }
    const auto& choice = j["choices"][0];
    s.text += choice.value("text", "");
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
      s.finish_reason = choice["finish_reason"].get<std::string>();
  }
  return s;
}

}  // namespace

TEST_CASE("failover: a worker killed mid-generation, the coordinator re-plans and the stream continues unchanged",
          "[registry]") {
  const uint16_t port = baton::test::free_loopback_port();
  auto w1 = join("w1", port), w2 = join("w2", port), w3 = join("w3", port);
  Served s(failover_config(port, 3, baton::test::temp_dir() + "/failover-a.json"), 512);
  REQUIRE(s.model->plan().size() == 3);
  const json body = {
      {"prompt", "Once upon a time"}, {"max_tokens", 240}, {"temperature", 0}, {"stream", true}, {"ignore_eos", true}};
  const Streamed want = stream(s.port(), body);
  REQUIRE(want.status == 200);
  REQUIRE(want.finish_reason == "length");
  REQUIRE(!want.text.empty());

  const std::string victim = s.model->plan()[1].node_id;  // the middle stage
  WorkerProcess& killed = victim == "w1" ? *w1 : victim == "w2" ? *w2 : *w3;
  const Streamed got = stream(s.port(), body, 4, [&] { killed.kill_now(); });
  INFO(got.error);
  CHECK(got.status == 200);
  CHECK(got.error.empty());
  CHECK(got.finish_reason == "length");
  CHECK(got.text == want.text);
  const auto stats = s.model->scheduler().stats();
  CHECK(stats.resumed >= 1);  // the kill landed mid-generation and the sequence was rebuilt
  CHECK(stats.failed == 0);
  fmt::print("failover: {} killed mid-generation: the stream took {:.0f} ms (undisturbed {:.0f} ms)\n", victim,
             got.total_ms, want.total_ms);

  const auto plan = s.model->plan();
  CHECK(plan.size() == 2);
  for (const auto& n : plan) CHECK(n.node_id != victim);
  auto health = baton::test::raw_request(s.port(), "GET", "/health", "");
  CHECK(health.status == 200);
  auto cluster = json::parse(baton::test::raw_request(s.port(), "GET", "/v1/cluster", "").body);
  CHECK(cluster["ready"] == true);
  bool victim_offline = false;
  for (const auto& n : cluster["nodes"])
    if (n["id"] == victim) victim_offline = n["status"] == "offline";
  CHECK(victim_offline);
}

TEST_CASE(
    "failover: a worker frozen mid-generation (SIGSTOP, connection left open) is given up after the heartbeat "
    "timeout, the stream continues unchanged",
    "[registry]") {
  const uint16_t port = baton::test::free_loopback_port();
  auto w1 = join("w1", port), w2 = join("w2", port), w3 = join("w3", port);
  Served s(failover_config(port, 3, baton::test::temp_dir() + "/failover-frozen.json"), 512);
  REQUIRE(s.model->plan().size() == 3);
  const json body = {
      {"prompt", "Once upon a time"}, {"max_tokens", 120}, {"temperature", 0}, {"stream", true}, {"ignore_eos", true}};
  const Streamed want = stream(s.port(), body);
  REQUIRE(want.status == 200);

  const std::string victim = s.model->plan()[1].node_id;
  WorkerProcess& frozen = victim == "w1" ? *w1 : victim == "w2" ? *w2 : *w3;
  const Streamed got = stream(s.port(), body, 4, [&] { REQUIRE(frozen.freeze()); });
  frozen.kill_now();  // SIGKILL ends a stopped process too
  INFO(got.error);
  CHECK(got.status == 200);
  CHECK(got.error.empty());
  CHECK(got.finish_reason == "length");
  CHECK(got.text == want.text);
  // heartbeat_timeout is 1 s here: a pass waiting on the frozen node must not wait out the
  // pipeline's request timeout (300 s; stream() itself gives up after 60 s).
  CHECK(got.total_ms < 20000);
  CHECK(s.model->scheduler().stats().resumed >= 1);
  fmt::print("failover: {} frozen mid-generation: the stream took {:.0f} ms (undisturbed {:.0f} ms)\n", victim,
             got.total_ms, want.total_ms);
}

TEST_CASE("failover: when the remaining nodes cannot hold the model, /health and requests say why until a node joins",
          "[registry]") {
  // Each worker offers memory for 3 of the 5 layers: two are needed.
  const auto file = baton::gguf::GgufFile::open(baton::test::shared_path(kStoriesModel));
  const auto fp = baton::ModelFootprint::from_file(*file, 128, 2);
  const uint64_t three = baton::range_bytes(fp, {}, {0, 3}), four = baton::range_bytes(fp, {}, {0, 4});
  const std::string cap = fmt::format("{:.6f}", static_cast<double>(three + four) / 2 / 1048576.0);
  const uint16_t port = baton::test::free_loopback_port();
  auto w1 = join("w1", port, {"--max-memory", cap}), w2 = join("w2", port, {"--max-memory", cap});
  Served s(failover_config(port, 2, baton::test::temp_dir() + "/failover-b.json"), 128);
  REQUIRE(s.model->plan().size() == 2);
  const std::string request = R"({"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0})";
  auto ok = baton::test::raw_request(s.port(), "POST", "/v1/completions", request);
  REQUIRE(ok.status == 200);
  const std::string want = json::parse(ok.body)["choices"][0]["text"].get<std::string>();

  w2->kill_now();
  std::string detail;
  CHECK(baton::test::eventually_true(
      [&] {
        auto h = baton::test::raw_request(s.port(), "GET", "/health", "");
        detail = json::parse(h.body).value("detail", "");
        return h.status == 503 && detail.find("missing") != std::string::npos;
      },
      5000ms));
  INFO(detail);
  CHECK(detail.find("w2") != std::string::npos);
  auto refused = baton::test::raw_request(s.port(), "POST", "/v1/completions", request);
  INFO(refused.body);
  CHECK(refused.status == 503);
  const std::string message = json::parse(refused.body)["error"]["message"].get<std::string>();
  CHECK(message.find("node w2") != std::string::npos);
  CHECK(message.find("missing") != std::string::npos);

  // A new worker joins: re-planned over w1 + w3, serving again with the same output.
  auto w3 = join("w3", port, {"--max-memory", cap});
  CHECK(baton::test::eventually_true(
      [&] { return baton::test::raw_request(s.port(), "GET", "/health", "").status == 200; }, 10000ms));
  auto again = baton::test::raw_request(s.port(), "POST", "/v1/completions", request);
  INFO(again.body);
  REQUIRE(again.status == 200);
  CHECK(json::parse(again.body)["choices"][0]["text"] == want);
  const auto plan = s.model->plan();
  REQUIRE(plan.size() == 2);
  CHECK(plan[0].node_id == "w1");
  CHECK(plan[1].node_id == "w3");
}

TEST_CASE(
    "failover: a re-plan forgets cached prompt prefixes, and a worker killed during a pipelined prefill resumes "
    "unchanged",
    "[registry]") {
  const uint16_t port = baton::test::free_loopback_port();
  auto w1 = join("w1", port), w2 = join("w2", port), w3 = join("w3", port), w4 = join("w4", port);
  Served s(failover_config(port, 4, baton::test::temp_dir() + "/failover-prefix.json"), 512);
  REQUIRE(s.model->plan().size() == 4);
  std::string story;
  for (int i = 0; i < 12; ++i) story += "Once upon a time there was a little girl who liked to play in the park. ";
  const json body = {{"prompt", story}, {"max_tokens", 12}, {"temperature", 0}, {"stream", true}, {"ignore_eos", true}};
  const Streamed want = stream(s.port(), body);
  REQUIRE(want.status == 200);
  REQUIRE(want.finish_reason == "length");
  const Streamed hit = stream(s.port(), body);  // the same prompt: its prefix's KV is reused
  CHECK(hit.text == want.text);
  CHECK(s.model->scheduler().stats().cache_hits == 1);

  auto by_id = [&](const std::string& id) -> WorkerProcess& {
    return id == "w1" ? *w1 : id == "w2" ? *w2 : id == "w3" ? *w3 : *w4;
  };
  // An idle node lost: the coordinator re-plans, and the entries it held are forgotten.
  by_id(s.model->plan()[1].node_id).kill_now();
  const auto deadline = Clock::now() + 20s;
  while (s.model->plan().size() != 3 && Clock::now() < deadline) std::this_thread::sleep_for(50ms);
  REQUIRE(s.model->plan().size() == 3);
  const Streamed after = stream(s.port(), body);
  CHECK(after.text == want.text);
  CHECK(s.model->scheduler().stats().cache_hits == 1);  // computed from scratch on the new plan

  // A worker frozen while the prompt's pieces are on their way, then killed: the sequence is
  // rebuilt on the remaining two and the completion is the same.
  WorkerProcess& victim = by_id(s.model->plan()[2].node_id);
  REQUIRE(victim.freeze());
  std::thread killer([&] {
    std::this_thread::sleep_for(300ms);
    victim.kill_now();
  });
  const json fresh = {{"prompt", story}, {"max_tokens", 12},   {"temperature", 0},
                      {"stream", true},  {"ignore_eos", true}, {"cache_prompt", false}};
  const Streamed got = stream(s.port(), fresh);
  killer.join();
  INFO(got.error);
  CHECK(got.status == 200);
  CHECK(got.text == want.text);
  CHECK(s.model->scheduler().stats().resumed >= 1);
  CHECK(s.model->plan().size() == 2);
}

TEST_CASE("failover: a worker lost while speculative verification passes are in flight, the stream resumes unchanged",
          "[registry]") {
  const uint16_t port = baton::test::free_loopback_port();
  auto w1 = join("w1", port), w2 = join("w2", port), w3 = join("w3", port);
  Served s(failover_config(port, 3, baton::test::temp_dir() + "/failover-spec.json"), 512, true);
  REQUIRE(s.model->plan().size() == 3);
  std::string story;
  for (int i = 0; i < 4; ++i) story += "Once upon a time there was a little girl who liked to play in the park. ";
  // Without drafts (the request's speculative.n_max 0): the reference.
  const json plain = {{"prompt", story}, {"max_tokens", 240},  {"temperature", 0},
                      {"stream", true},  {"ignore_eos", true}, {"speculative.n_max", 0}};
  const Streamed want = stream(s.port(), plain);
  REQUIRE(want.status == 200);
  REQUIRE(want.finish_reason == "length");
  REQUIRE(s.model->scheduler().stats().speculation.drafted == 0);

  const json body = {{"prompt", story}, {"max_tokens", 240},  {"temperature", 0},
                     {"stream", true},  {"ignore_eos", true}, {"cache_prompt", false}};
  const Streamed undisturbed = stream(s.port(), body);
  CHECK(undisturbed.text == want.text);
  const auto before = s.model->scheduler().stats().speculation;
  CHECK(before.accepted > 0);  // the story repeats: drafts were kept

  // Frozen (its pass hangs mid-verification), then killed: the sequence is rebuilt on the two
  // that remain and goes on speculating; the text is the same.
  const std::string victim = s.model->plan()[1].node_id;
  WorkerProcess& frozen = victim == "w1" ? *w1 : victim == "w2" ? *w2 : *w3;
  std::thread killer;
  const Streamed got = stream(s.port(), body, 4, [&] {
    REQUIRE(frozen.freeze());
    killer = std::thread([&] {
      std::this_thread::sleep_for(300ms);
      frozen.kill_now();
    });
  });
  if (killer.joinable()) killer.join();
  INFO(got.error);
  CHECK(got.status == 200);
  CHECK(got.text == want.text);
  const auto stats = s.model->scheduler().stats();
  CHECK(stats.resumed >= 1);  // the loss landed mid-generation
  CHECK(stats.speculation.accepted > before.accepted);
  CHECK(s.model->plan().size() == 2);
}
