// The non-generation endpoints and every error status over real HTTP: /v1/models, /health,
// /v1/cluster, /metrics, /tokenize, /detokenize; 400 (naming the field), 401, 404, 413.
#include <catch2/catch.hpp>
#include <httplib.h>

#include <thread>

#include "api_test_util.h"

namespace {

using nlohmann::json;
using namespace baton::test;

struct Reply {
  int status;
  json body;
};

Reply request(int port, const std::string& method, const std::string& path, const std::string& body = "",
              const httplib::Headers& headers = {}) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(20);
  auto res = method == "GET" ? c.Get(path.c_str(), headers) : c.Post(path.c_str(), headers, body, "application/json");
  REQUIRE(res);
  INFO(res->body);
  json j = res->body.empty() || (path == "/metrics" && res->status == 200) ? json(res->body) : json::parse(res->body);
  return {res->status, j};
}

// An OpenAI error body with this status and param.
void check_error(const Reply& r, int status, const std::string& param) {
  INFO(r.body.dump());
  CHECK(r.status == status);
  REQUIRE(r.body.contains("error"));
  CHECK(r.body["error"]["code"] == status);
  CHECK(r.body["error"]["message"].is_string());
  CHECK(r.body["error"]["type"].is_string());
  if (param.empty()) CHECK(r.body["error"]["param"].is_null());
  else CHECK(r.body["error"]["param"] == param);
}

std::string message(const Reply& r) { return r.body["error"]["message"].get<std::string>(); }

}  // namespace

TEST_CASE("GET /v1/models lists the model with its size, quantization, context and parameters", "[api]") {
  baton::api::ServeOptions so;
  so.alias = "tiny-stories";
  LocalServer s(so);
  Reply r = request(s.port(), "GET", "/v1/models");
  REQUIRE(r.status == 200);
  CHECK(r.body["object"] == "list");
  REQUIRE(r.body["data"].size() == 1);
  const json& m = r.body["data"][0];
  CHECK(m["id"] == "tiny-stories");
  CHECK(m["object"] == "model");
  CHECK(m["owned_by"] == "baton");
  CHECK(m["created"].get<int64_t>() > 0);
  CHECK(m["size"] == 1185376);
  CHECK(m["quantization"] == "F32");
  CHECK(m["n_params"] == 292800);
  CHECK(m["n_ctx"] == s.model->scheduler().n_ctx());
}

TEST_CASE("GET /health shows the one local node holding every layer", "[api]") {
  LocalServer s;
  Reply r = request(s.port(), "GET", "/health");
  REQUIRE(r.status == 200);
  CHECK(r.body["status"] == "ok");
  CHECK(r.body["layers_covered"] == true);
  CHECK(r.body["n_layer"] == 5);
  REQUIRE(r.body["nodes"].size() == 1);
  const json& n = r.body["nodes"][0];
  CHECK(n["id"] == "coordinator");
  CHECK(n["status"] == "online");
  CHECK(n["layers"] == json::array({0, 4}));
  CHECK(n["address"] == "127.0.0.1:" + std::to_string(s.port()));
  CHECK(n["memory_total_bytes"].get<uint64_t>() > 0);
  Reply c = request(s.port(), "GET", "/v1/cluster");
  REQUIRE(c.status == 200);
  CHECK(c.body["ready"] == true);
  CHECK(c.body["nodes"][0]["role"] == "coordinator");
}

TEST_CASE("GET /metrics is Prometheus text with request counters, token counters and latency histograms", "[api]") {
  LocalServer s;
  request(s.port(), "POST", "/v1/completions", R"({"prompt":"Once upon a time","max_tokens":5})");
  request(s.port(), "POST", "/v1/completions", R"({"prompt":1})");
  request(s.port(), "GET", "/nowhere");
  const std::vector<std::string> wants = {"# TYPE baton_http_requests_total counter",
                                          "baton_http_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 1",
                                          "baton_http_requests_total{endpoint=\"/v1/completions\",status=\"400\"} 1",
                                          "baton_http_errors_total{endpoint=\"other\",status=\"404\"} 1",
                                          "baton_queue_depth 0",
                                          "baton_active_slots 0",
                                          "baton_slots 4",
                                          "baton_generated_tokens_total 5",
                                          "# TYPE baton_time_to_first_token_seconds histogram",
                                          "baton_time_to_first_token_seconds_bucket{le=\"+Inf\"} 1",
                                          "baton_time_to_first_token_seconds_count 1",
                                          "baton_inter_token_latency_seconds_count 4",
                                          "baton_prompt_tokens_total "};
  // A request is counted once its response is written, so a scrape may trail the last replies
  // by moments: scrape until everything shows up (bounded), then check.
  std::string text;
  for (int i = 0; i < 100; ++i) {
    Reply r = request(s.port(), "GET", "/metrics");
    REQUIRE(r.status == 200);
    text = r.body.get<std::string>();
    bool all = true;
    for (const auto& w : wants) all = all && text.find(w) != std::string::npos;
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const auto& want : wants) {
    INFO(want);
    CHECK(text.find(want) != std::string::npos);
  }
}

TEST_CASE("POST /tokenize and /detokenize use llama-server's shapes", "[api]") {
  LocalServer s;
  const auto& tok = s.model->tokenizer();
  Reply t = request(s.port(), "POST", "/tokenize", R"({"content":"Hello world"})");
  REQUIRE(t.status == 200);
  auto want = tok.encode("Hello world", false, true);
  CHECK(t.body["tokens"] == json(want));
  Reply bos = request(s.port(), "POST", "/tokenize", R"({"content":"Hello world","add_special":true})");
  CHECK(bos.body["tokens"][0] == tok.bos());
  Reply pieces = request(s.port(), "POST", "/tokenize", R"({"content":"Hello world","with_pieces":true})");
  REQUIRE(pieces.body["tokens"].size() == want.size());
  CHECK(pieces.body["tokens"][0]["id"] == want[0]);
  CHECK(pieces.body["tokens"][0]["piece"] == tok.token_to_piece(want[0], true));
  Reply d = request(s.port(), "POST", "/detokenize", json{{"tokens", want}}.dump());
  REQUIRE(d.status == 200);
  CHECK(d.body["content"] == tok.decode(want));
  check_error(request(s.port(), "POST", "/detokenize", R"({"tokens":[1, 99999]})"), 400, "tokens[1]");
  check_error(request(s.port(), "POST", "/detokenize", R"({"tokens":"abc"})"), 400, "tokens");
  check_error(request(s.port(), "POST", "/tokenize", R"({"content":5})"), 400, "content");
}

TEST_CASE("bad requests get 400 naming the field", "[api]") {
  LocalServer s;
  const int p = s.port();
  Reply r = request(p, "POST", "/v1/completions", "{not json");
  check_error(r, 400, "body");
  CHECK(message(r).find("not valid JSON") != std::string::npos);
  check_error(request(p, "POST", "/v1/completions", "[1,2]"), 400, "body");
  r = request(p, "POST", "/v1/completions", R"({"prompt":"x","temperature":"hot"})");
  check_error(r, 400, "temperature");
  CHECK(message(r) == "'temperature' must be a number, got string");
  check_error(request(p, "POST", "/v1/completions", R"({"prompt":"x","max_tokens":1.5})"), 400, "max_tokens");
  check_error(request(p, "POST", "/v1/completions", R"({"prompt":"x","max_tokens":0})"), 400, "max_tokens");
  check_error(request(p, "POST", "/v1/completions", R"({"prompt":"x","top_p":3})"), 400, "top_p");
  check_error(request(p, "POST", "/v1/completions", R"({"prompt":"x","stream":"yes"})"), 400, "stream");
  check_error(request(p, "POST", "/v1/completions", R"({"prompt":"x","stop":[1]})"), 400, "stop[0]");
  check_error(request(p, "POST", "/v1/completions", R"({"prompt":"x","n":2})"), 400, "n");
  check_error(request(p, "POST", "/v1/completions", R"({"prompt":"x","logprobs":true})"), 400, "logprobs");
  check_error(request(p, "POST", "/v1/completions", R"({"max_tokens":3})"), 400, "prompt");
  check_error(request(p, "POST", "/v1/completions", R"({"prompt":["a","b"]})"), 400, "prompt");
  check_error(request(p, "POST", "/v1/completions", R"({"prompt":[1,-2]})"), 400, "prompt[1]");
  r = request(p, "POST", "/v1/completions", R"({"prompt":[1, 600]})");
  check_error(r, 400, "prompt");  // outside the 512-token vocabulary
  check_error(request(p, "POST", "/v1/chat/completions", R"({"messages":"hi"})"), 400, "messages");
  check_error(request(p, "POST", "/v1/chat/completions", R"({"messages":[{"role":"robot","content":"x"}]})"), 400,
              "messages[0].role");
  check_error(request(p, "POST", "/v1/chat/completions", R"({"messages":[{"role":"user","content":7}]})"), 400,
              "messages[0].content");
  check_error(
      request(p, "POST", "/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})"),
      400, "top_logprobs");
}

TEST_CASE("a prompt longer than the context gets 400 stating both lengths", "[api]") {
  baton::api::ServeOptions so;
  so.n_ctx = 64;
  LocalServer s(so);
  std::vector<int32_t> prompt(100, 300);
  Reply r = request(s.port(), "POST", "/v1/completions", json{{"prompt", prompt}}.dump());
  check_error(r, 400, "prompt");
  CHECK(message(r).find("100") != std::string::npos);
  CHECK(message(r).find("64") != std::string::npos);
  std::string words;
  for (int i = 0; i < 80; ++i) words += " the cat";
  r = request(s.port(), "POST", "/v1/chat/completions",
              json{{"messages", {{{"role", "user"}, {"content", words}}}}}.dump());
  check_error(r, 400, "messages");
  CHECK(message(r).find("64") != std::string::npos);
}

TEST_CASE("unknown routes get 404 and oversized bodies 413, both as OpenAI errors", "[api]") {
  LocalServer s;
  Reply r = request(s.port(), "GET", "/v2/nothing");
  check_error(r, 404, "");
  CHECK(message(r).find("/v2/nothing") != std::string::npos);
  check_error(request(s.port(), "GET", "/v1/completions"), 404, "");  // wrong method
  std::string big = R"({"prompt":")" + std::string(9u << 20, 'a') + R"("})";
  RawResponse big_reply = raw_request(s.port(), "POST", "/v1/completions", big);
  CHECK(big_reply.status == 413);
  CHECK(json::parse(big_reply.body)["error"]["code"] == 413);
}

TEST_CASE("a JSON body over 8 KiB sent as a form (curl -d) gets 413 saying to send application/json", "[api]") {
  LocalServer s;
  const std::string body = R"({"content":")" + std::string(9000, 'a') + R"("})";
  RawResponse form = raw_request(s.port(), "POST", "/tokenize", body, "", "application/x-www-form-urlencoded");
  REQUIRE(form.status == 413);
  const std::string msg = json::parse(form.body)["error"]["message"];
  CHECK(msg.find("application/x-www-form-urlencoded") != std::string::npos);
  CHECK(msg.find("Content-Type: application/json") != std::string::npos);
  RawResponse as_json = raw_request(s.port(), "POST", "/tokenize", body);
  CHECK(as_json.status == 200);
  CHECK(json::parse(as_json.body)["tokens"].size() > 0);
}

TEST_CASE("with an API key every route but /health needs the Bearer key", "[api]") {
  baton::api::ServerOptions ho;
  ho.api_key = "sekrit-key";
  LocalServer s({}, ho);
  const int p = s.port();
  Reply r = request(p, "GET", "/v1/models");
  check_error(r, 401, "");
  CHECK(message(r).find("missing") != std::string::npos);
  check_error(request(p, "GET", "/v1/models", "", {{"Authorization", "Bearer wrong"}}), 401, "");
  check_error(request(p, "GET", "/v1/models", "", {{"Authorization", "sekrit-key"}}), 401, "");
  check_error(request(p, "POST", "/v1/completions", R"({"prompt":"x"})", {{"Authorization", "Bearer sekrit-ke"}}), 401,
              "");
  check_error(request(p, "GET", "/metrics", ""), 401, "");
  CHECK(request(p, "GET", "/health").status == 200);
  CHECK(request(p, "GET", "/v1/models", "", {{"Authorization", "Bearer sekrit-key"}}).status == 200);
  Reply ok = request(p, "POST", "/v1/completions", R"({"prompt":"Once","max_tokens":2})",
                     {{"Authorization", "Bearer sekrit-key"}});
  CHECK(ok.status == 200);
  CHECK(ok.body["usage"]["completion_tokens"] == 2);
}
