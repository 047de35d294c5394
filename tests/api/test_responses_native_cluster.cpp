// The engine-coordinator binary over two real engine-worker processes answers /v1/responses
// (whole and streamed) and /completion (with probabilities) bitwise like one process; its
// --cors-origin and --no-slots flags reach the server.
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

json post_body(int port, const std::string& path, const json& body) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(30);
  auto r = c.Post(path.c_str(), body.dump(), "application/json");
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  return json::parse(r->body);
}

// The text of a streamed /v1/responses answer (its output_text.done event).
std::string streamed_response_text(int port, json body) {
  body["stream"] = true;
  RawResponse r = raw_request(port, "POST", "/v1/responses", body.dump());
  REQUIRE(r.status == 200);
  const std::string marker = "event: response.output_text.done\ndata: ";
  const size_t at = r.body.find(marker);
  REQUIRE(at != std::string::npos);
  return json::parse(r.body.substr(at + marker.size(), r.body.find("\n\n", at) - at - marker.size()))["text"];
}

}  // namespace

TEST_CASE("a 2-worker cluster answers /v1/responses and /completion exactly like one process", "[api]") {
  const std::string model = stories_path();
  const json responses = {{"instructions", "You tell stories."},
                          {"input", "Tell me about a frog."},
                          {"max_output_tokens", 14},
                          {"temperature", 0}};
  const json completion = {{"prompt", "Lily went to the park and"},
                           {"n_predict", 14},
                           {"temperature", 0},
                           {"n_probs", 2},
                           {"return_tokens", true}};
  json want_responses, want_completion;
  std::string want_stream;
  {
    LocalServer local;
    want_responses = post_body(local.port(), "/v1/responses", responses);
    want_completion = post_body(local.port(), "/completion", completion);
    want_stream = streamed_response_text(local.port(), responses);
  }
  WorkerProcess w1("node-01", model, {"--insecure"});
  WorkerProcess w2("node-02", model, {"--insecure"});
  const std::string yaml_path = temp_dir() + "/responses-cluster.yaml";
  std::ofstream(yaml_path) << fmt::format(
      "model: {}\ncluster:\n  insecure: true\n  connect_timeout: 5\n  load_timeout: 20\n  nodes:\n"
      "    - {{ id: node-01, host: 127.0.0.1, port: {}, layers: [0, 1] }}\n"
      "    - {{ id: node-02, host: 127.0.0.1, port: {}, layers: [2, 4] }}\n",
      model, w1.port(), w2.port());
  CoordinatorProcess c({"--config", yaml_path, "-t", "1", "--cors-origin", "http://app.example", "--no-slots"});

  const json got = post_body(c.port(), "/v1/responses", responses);
  CHECK(got["output"] == json::array({[&] {
          json m = want_responses["output"][0];
          m["id"] = got["output"][0]["id"];  // ids are per response
          return m;
        }()}));
  CHECK(got["usage"] == want_responses["usage"]);
  CHECK(streamed_response_text(c.port(), responses) == want_stream);
  CHECK(want_stream == want_responses["output"][0]["content"][0]["text"]);
  const json got_completion = post_body(c.port(), "/completion", completion);
  CHECK(got_completion["content"] == want_completion["content"]);
  CHECK(got_completion["tokens"] == want_completion["tokens"]);
  CHECK(got_completion["completion_probabilities"] == want_completion["completion_probabilities"]);  // bitwise

  RawResponse pre = raw_request(c.port(), "OPTIONS", "/v1/responses", "",
                                "Origin: http://app.example\r\nAccess-Control-Request-Method: POST\r\n");
  CHECK(pre.status == 204);
  CHECK(pre.headers.find("Access-Control-Allow-Origin: http://app.example") != std::string::npos);
  httplib::Client cl("127.0.0.1", c.port());
  auto slots = cl.Get("/slots");
  REQUIRE(slots);
  CHECK(slots->status == 501);
  CHECK(c.terminate() == 0);
}
