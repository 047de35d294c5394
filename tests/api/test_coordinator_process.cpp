// The engine-coordinator binary: local mode with a key file (start, serve, SIGTERM -> exit 0),
// and cluster mode over two real engine-worker processes, whose greedy answers must equal
// local mode's; then a killed worker -> 502/503 naming it and /health 503.
#include <catch2/catch.hpp>
#include <fmt/core.h>
#include <httplib.h>

#include <fstream>

#include "api_test_util.h"
#include "coordinator_process.h"
#include "pipeline/worker_process.h"

namespace {

using nlohmann::json;
using namespace baton::test;

httplib::Result post(int port, const std::string& path, const json& body, const httplib::Headers& h = {}) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(20);
  return c.Post(path.c_str(), h, body.dump(), "application/json");
}

std::string streamed_text(int port, const std::string& path, json body) {
  body["stream"] = true;
  RawResponse r = raw_request(port, "POST", path, body.dump());
  REQUIRE(r.status == 200);
  std::string text;
  for (const auto& e : sse_payloads(r.body)) {
    if (e == "[DONE]") continue;
    json j = json::parse(e);
    const json& c = j["choices"][0];
    text += c.contains("text") ? c["text"].get<std::string>() : c["delta"].value("content", std::string());
  }
  return text;
}

}  // namespace

TEST_CASE("engine-coordinator --model serves with an API key file and exits 0 on SIGTERM", "[api]") {
  std::string key_file = temp_dir() + "/api.key";
  std::ofstream(key_file) << "file-key-123\n";
  CoordinatorProcess c(
      {"--model", stories_path(), "-t", "1", "--slots", "2", "--alias", "tiny", "--api-key-file", key_file});
  httplib::Client cl("127.0.0.1", c.port());
  auto unauth = cl.Get("/v1/models");
  REQUIRE(unauth);
  CHECK(unauth->status == 401);
  auto models = cl.Get("/v1/models", {{"Authorization", "Bearer file-key-123"}});
  REQUIRE(models);
  REQUIRE(models->status == 200);
  CHECK(json::parse(models->body)["data"][0]["id"] == "tiny");
  auto r = post(c.port(), "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}},
                {{"Authorization", "Bearer file-key-123"}});
  REQUIRE(r);
  REQUIRE(r->status == 200);
  CHECK(json::parse(r->body)["usage"]["completion_tokens"] == 8);
  auto health = cl.Get("/health");
  REQUIRE(health);
  CHECK(json::parse(health->body)["slots"] == 2);  // /health needs no key
  CHECK(c.terminate() == 0);
}

TEST_CASE("cluster mode over two workers answers exactly like local mode, and names a dead worker", "[api]") {
  const std::string model = stories_path();
  // Local mode, in process: the reference answers.
  json completion = {{"prompt", "Lily went to the park and"}, {"max_tokens", 20}, {"temperature", 0}, {"logprobs", 2}};
  json chat = {
      {"messages", {{{"role", "user"}, {"content", "Tell me a story."}}}}, {"max_tokens", 12}, {"temperature", 0}};
  json want_completion, want_chat;
  std::string want_stream;
  {
    LocalServer local;
    want_completion = json::parse(post(local.port(), "/v1/completions", completion)->body);
    want_chat = json::parse(post(local.port(), "/v1/chat/completions", chat)->body);
    want_stream = streamed_text(local.port(), "/v1/completions", completion);
  }
  WorkerProcess w1("node-01", model, {"--insecure"});
  WorkerProcess w2("node-02", model, {"--insecure"});
  std::string yaml = fmt::format(
      "model: {}\ncluster:\n  insecure: true\n  connect_timeout: 5\n  load_timeout: 20\n  nodes:\n"
      "    - {{ id: node-01, host: 127.0.0.1, port: {}, layers: [0, 1] }}\n"
      "    - {{ id: node-02, host: 127.0.0.1, port: {}, layers: [2, 4] }}\n",
      model, w1.port(), w2.port());
  std::string yaml_path = temp_dir() + "/cluster.yaml";
  std::ofstream(yaml_path) << yaml;
  CoordinatorProcess c({"--config", yaml_path, "-t", "1"});
  CHECK(c.output().find("| node-02 | 127.0.0.1:") != std::string::npos);  // the plan table

  auto got = post(c.port(), "/v1/completions", completion);
  REQUIRE(got);
  REQUIRE(got->status == 200);
  json got_completion = json::parse(got->body);
  CHECK(got_completion["choices"][0]["text"] == want_completion["choices"][0]["text"]);
  CHECK(got_completion["choices"][0]["logprobs"] == want_completion["choices"][0]["logprobs"]);  // bitwise
  CHECK(got_completion["usage"] == want_completion["usage"]);
  json got_chat = json::parse(post(c.port(), "/v1/chat/completions", chat)->body);
  CHECK(got_chat["choices"][0]["message"] == want_chat["choices"][0]["message"]);
  CHECK(streamed_text(c.port(), "/v1/completions", completion) == want_stream);

  httplib::Client cl("127.0.0.1", c.port());
  json health = json::parse(cl.Get("/health")->body);
  CHECK(health["status"] == "ok");
  CHECK(health["layers_covered"] == true);
  REQUIRE(health["nodes"].size() == 3);
  CHECK(health["nodes"][0]["role"] == "coordinator");
  CHECK(health["nodes"][1]["id"] == "node-01");
  CHECK(health["nodes"][1]["layers"] == json::array({0, 1}));
  CHECK(health["nodes"][2]["layers"] == json::array({2, 4}));
  CHECK(health["nodes"][2]["status"] == "online");
  std::string metrics = cl.Get("/metrics")->body;
  CHECK(metrics.find("baton_stage_compute_seconds_total{node=\"node-01\"}") != std::string::npos);
  CHECK(metrics.find("baton_hop_bytes_total{from=\"node-01\",to=\"node-02\"}") != std::string::npos);
  CHECK(metrics.find("baton_pipeline_network_seconds_total ") != std::string::npos);
  CHECK(metrics.find("baton_stage_busy_seconds_total{node=\"node-02\"}") != std::string::npos);

  // A worker dies: the next request fails naming it (502 when its pass met the loss, 503 once the
  // coordinator knows: it refuses requests while it reconnects); /health turns 503.
  w2.kill_now();
  auto failed = post(c.port(), "/v1/completions", completion);
  REQUIRE(failed);
  INFO(failed->body);
  CHECK((failed->status == 502 || failed->status == 503));
  CHECK(json::parse(failed->body)["error"]["message"].get<std::string>().find("node-02") != std::string::npos);
  // Streaming: one SSE error event naming the node, then the stream closes without [DONE].
  json streaming = completion;
  streaming["stream"] = true;
  RawResponse sr = raw_request(c.port(), "POST", "/v1/completions", streaming.dump());
  INFO(sr.body);
  if (sr.status == 200) {
    auto events = sse_payloads(sr.body);
    REQUIRE(!events.empty());
    CHECK(events.back() != "[DONE]");
    CHECK(json::parse(events.back())["error"]["message"].get<std::string>().find("node-02") != std::string::npos);
  } else {
    CHECK(sr.status == 503);  // the failure was already known when the request was submitted
  }
  auto h = cl.Get("/health");
  REQUIRE(h);
  INFO(h->body);
  CHECK(h->status == 503);
  CHECK(c.terminate() == 0);
}
