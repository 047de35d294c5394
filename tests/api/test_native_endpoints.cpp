// llama-server's native endpoints over real HTTP (/completion, /props, /slots, /models),
// /v1/models/{id}, n_predict on the OpenAI endpoints, and CORS (default same origin only,
// --cors-origin lists, '*', preflights without the key).
#include <catch2/catch.hpp>
#include <httplib.h>

#include "api_test_util.h"
#include "engine/api/cors.h"

namespace {

using nlohmann::json;
using namespace baton::test;

json call(int port, const std::string& method, const std::string& path, const json& body = nullptr, int want = 200) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(20);
  auto res = method == "GET" ? c.Get(path.c_str()) : c.Post(path.c_str(), body.dump(), "application/json");
  REQUIRE(res);
  INFO(method << " " << path << ": " << res->body);
  CHECK(res->status == want);
  return json::parse(res->body);
}

}  // namespace

TEST_CASE("POST /completion answers in llama-server's shape with the /v1/completions greedy text", "[api]") {
  LocalServer server;
  const int port = server.port();
  const json legacy =
      call(port, "POST", "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 12}, {"temperature", 0}});
  const json j = call(port, "POST", "/completion",
                      {{"prompt", "Once upon a time"},
                       {"n_predict", 12},
                       {"temperature", 0},
                       {"return_tokens", true},
                       {"n_probs", 3},
                       {"top_k", -1},
                       {"seed", -1},
                       {"repeat_last_n", 0},
                       {"typical_p", 1.0},
                       {"mirostat", 0},
                       {"cache_prompt", true}});
  CHECK(j["content"] == legacy["choices"][0]["text"]);
  REQUIRE(j["tokens"].size() == 12);
  CHECK(j["stop"] == true);
  CHECK(j["stop_type"] == "limit");
  CHECK(j["stopping_word"] == "");
  CHECK(j["truncated"] == false);
  CHECK(j["tokens_predicted"] == 12);
  CHECK(j["tokens_evaluated"] == legacy["usage"]["prompt_tokens"]);
  CHECK(j["model"] == "stories260K");
  CHECK(j["generation_settings"]["n_predict"] == 12);
  CHECK(j["generation_settings"]["top_k"] == 0);
  CHECK(j["generation_settings"]["repeat_last_n"] == 0);
  CHECK(j["generation_settings"]["n_ctx"] == server.model->info().n_ctx);
  CHECK(j["timings"]["predicted_n"] == 12);
  CHECK(j["timings"]["prompt_n"] == j["tokens_evaluated"]);
  CHECK(j["timings"]["predicted_ms"].get<double>() >= 0);
  REQUIRE(j["completion_probabilities"].size() == 12);
  const json& p0 = j["completion_probabilities"][0];
  CHECK(p0["id"] == j["tokens"][0]);
  CHECK(p0["top_logprobs"].size() == 3);
  CHECK(p0["top_logprobs"][0]["id"] == p0["id"]);  // greedy: the chosen token is the most likely
  CHECK(p0["bytes"].is_array());

  // Tokens only when asked (or streaming); a stop string -> stop_type word and the stopping word.
  const std::string text = j["content"];
  const std::string stop = text.substr(4, 3);
  const json stopped = call(port, "POST", "/completion",
                            {{"prompt", "Once upon a time"}, {"n_predict", 12}, {"temperature", 0}, {"stop", {stop}}});
  CHECK(stopped["tokens"] == json::array());
  CHECK(stopped["stop_type"] == "word");
  CHECK(stopped["stopping_word"] == stop);
  CHECK(stopped["content"] == text.substr(0, text.find(stop)));
  // n_predict 0 evaluates nothing and generates nothing; token-id prompts work too.
  const json none = call(port, "POST", "/completion", {{"prompt", "Once upon a time"}, {"n_predict", 0}});
  CHECK(none["content"] == "");
  CHECK(none["tokens_predicted"] == 0);
  const json ids = call(port, "POST", "/tokenize", {{"content", "Once upon a time"}, {"add_special", true}});
  const json by_ids =
      call(port, "POST", "/completion", {{"prompt", ids["tokens"]}, {"n_predict", 12}, {"temperature", 0}});
  CHECK(by_ids["content"] == text);
}

TEST_CASE("POST /completion streams one chunk per token, then the final object, without [DONE]", "[api]") {
  LocalServer server;
  const json body = {{"prompt", "Once upon a time"}, {"n_predict", 10}, {"temperature", 0}};
  const json whole = call(server.port(), "POST", "/completion", body);
  json streaming = body;
  streaming["stream"] = true;
  RawResponse raw = raw_request(server.port(), "POST", "/completion", streaming.dump());
  REQUIRE(raw.status == 200);
  const auto events = sse_payloads(raw.body);
  REQUIRE(events.size() == 11);
  std::string text;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json c = json::parse(events[i]);
    CHECK(c["stop"] == false);
    CHECK(c["tokens"].size() == 1);
    CHECK(c["tokens_predicted"] == i + 1);
    text += c["content"].get<std::string>();
  }
  CHECK(text == whole["content"]);
  const json final = json::parse(events.back());
  CHECK(final["stop"] == true);
  CHECK(final["content"] == "");
  CHECK(final["stop_type"] == "limit");
  CHECK(final["tokens_predicted"] == 10);
  CHECK(final["generation_settings"]["stream"] == true);
}

TEST_CASE("/completion refuses samplers Baton does not have unless they are off", "[api]") {
  LocalServer server;
  for (const auto& [name, value] : std::vector<std::pair<std::string, json>>{{"mirostat", 2},
                                                                             {"typical_p", 0.5},
                                                                             {"dry_multiplier", 0.8},
                                                                             {"xtc_probability", 0.5},
                                                                             {"post_sampling_probs", true},
                                                                             {"n_probs", 21},
                                                                             {"repeat_last_n", -2},
                                                                             {"n_cmpl", 2}}) {
    const json r = call(server.port(), "POST", "/completion", {{"prompt", "Hi"}, {name, value}}, 400);
    CHECK(r["error"]["param"] == name);
  }
}

TEST_CASE("n_predict is honoured by /v1/completions and /v1/chat/completions and wins over max_tokens", "[api]") {
  LocalServer server;
  const json c = call(server.port(), "POST", "/v1/completions",
                      {{"prompt", "Hi"}, {"max_tokens", 3}, {"n_predict", 6}, {"temperature", 0}});
  CHECK(c["usage"]["completion_tokens"] == 6);
  const json chat = call(server.port(), "POST", "/v1/chat/completions",
                         {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"n_predict", 5}, {"temperature", 0}});
  CHECK(chat["usage"]["completion_tokens"] == 5);
  const json bad = call(server.port(), "POST", "/v1/completions", {{"prompt", "Hi"}, {"n_predict", -2}}, 400);
  CHECK(bad["error"]["param"] == "n_predict");
}

TEST_CASE("GET /props, /slots, /models and /v1/models/{id} describe the model and the slots", "[api]") {
  baton::api::ServeOptions so;
  so.scheduler.slots = 3;
  LocalServer server(so);
  const int port = server.port();
  const json props = call(port, "GET", "/props");
  CHECK(props["total_slots"] == 3);
  CHECK(props["model_alias"] == "stories260K");
  CHECK(props["model_path"] == stories_path());
  CHECK(props["default_generation_settings"]["n_ctx"] == server.model->info().n_ctx);
  CHECK(props["default_generation_settings"]["params"]["temperature"].get<double>() == Approx(0.8));
  CHECK(props["default_generation_settings"]["params"]["n_predict"] == -1);
  const json refused = call(port, "POST", "/props", json::object(), 501);
  CHECK(refused["error"]["type"] == "not_supported_error");
  const json slots = call(port, "GET", "/slots");
  REQUIRE(slots.size() == 3);
  CHECK(slots[2]["id"] == 2);
  CHECK(slots[0]["is_processing"] == false);
  CHECK(slots[0]["n_ctx"] == server.model->info().n_ctx);
  call(port, "GET", "/slots?fail_on_no_slot=1");
  const json models = call(port, "GET", "/models");
  CHECK(models == call(port, "GET", "/v1/models"));
  CHECK(call(port, "GET", "/v1/models/stories260K") == models["data"][0]);
  const json unknown = call(port, "GET", "/v1/models/gpt-4o", nullptr, 404);
  CHECK(unknown["error"]["param"] == "model");
  CHECK(unknown["error"]["message"].get<std::string>().find("gpt-4o") != std::string::npos);

  baton::api::ServerOptions no_slots;
  no_slots.slots_endpoint = false;
  LocalServer without({}, no_slots);
  CHECK(call(without.port(), "GET", "/slots", nullptr, 501)["error"]["type"] == "not_supported_error");
}

TEST_CASE("CORS: same origin only by default, and listed origins get the headers and key-less preflights", "[api]") {
  const std::string preflight =
      "Origin: http://app.example\r\nAccess-Control-Request-Method: POST\r\n"
      "Access-Control-Request-Headers: authorization, content-type, x-stainless-lang\r\n";
  {
    LocalServer plain;
    RawResponse get = raw_request(plain.port(), "GET", "/v1/models", "", "Origin: http://app.example\r\n");
    CHECK(get.status == 200);
    CHECK(get.headers.find("Access-Control-Allow-Origin") == std::string::npos);
    RawResponse pre = raw_request(plain.port(), "OPTIONS", "/v1/chat/completions", "", preflight);
    CHECK(pre.status == 204);
    CHECK(pre.headers.find("Access-Control-Allow-Origin") == std::string::npos);
  }
  baton::api::ServerOptions ho;
  ho.api_key = "k";
  ho.cors_origins = {"http://app.example/", "https://b.example, http://localhost:5173"};
  LocalServer server({}, ho);
  RawResponse pre = raw_request(server.port(), "OPTIONS", "/v1/chat/completions", "", preflight);
  INFO(pre.headers);
  CHECK(pre.status == 204);  // no key needed
  CHECK(pre.headers.find("Access-Control-Allow-Origin: http://app.example\r\n") != std::string::npos);
  CHECK(pre.headers.find("Access-Control-Allow-Methods: GET, POST, OPTIONS") != std::string::npos);
  CHECK(pre.headers.find("Access-Control-Allow-Headers: Authorization, Content-Type, x-stainless-lang") !=
        std::string::npos);
  CHECK(pre.headers.find("Vary: Origin") != std::string::npos);
  // Every answer to an allowed origin carries the header, errors too; other origins get none.
  RawResponse unauth = raw_request(server.port(), "GET", "/v1/models", "", "Origin: https://b.example\r\n");
  CHECK(unauth.status == 401);
  CHECK(unauth.headers.find("Access-Control-Allow-Origin: https://b.example") != std::string::npos);
  RawResponse ok = raw_request(server.port(), "POST", "/v1/completions", R"({"prompt": "Hi", "max_tokens": 2})",
                               "Origin: http://localhost:5173\r\nAuthorization: Bearer k\r\n");
  CHECK(ok.status == 200);
  CHECK(ok.headers.find("Access-Control-Allow-Origin: http://localhost:5173") != std::string::npos);
  RawResponse other = raw_request(server.port(), "GET", "/health", "", "Origin: http://evil.example\r\n");
  CHECK(other.headers.find("Access-Control-Allow-Origin") == std::string::npos);
  RawResponse other_pre = raw_request(server.port(), "OPTIONS", "/v1/models", "",
                                      "Origin: http://evil.example\r\nAccess-Control-Request-Method: GET\r\n");
  CHECK(other_pre.status == 204);
  CHECK(other_pre.headers.find("Access-Control-Allow") == std::string::npos);

  baton::api::ServerOptions any;
  any.cors_origins = {"*"};
  LocalServer open({}, any);
  RawResponse star = raw_request(open.port(), "GET", "/v1/models", "", "Origin: http://x.example\r\n");
  CHECK(star.headers.find("Access-Control-Allow-Origin: *") != std::string::npos);
  CHECK_THROWS_WITH(baton::api::CorsPolicy({"example.com"}), Catch::Contains("is not an origin"));
  CHECK_THROWS_WITH(baton::api::CorsPolicy({"http://a.example/path"}), Catch::Contains("is not an origin"));
}
