// Constrained output and function calling over real HTTP on 127.0.0.1 (stories260K, whose
// text is nothing like JSON, so only the grammar makes the output conform): forced tool calls
// in the Hermes (chatml) and Llama 3 syntaxes, streamed and not; response_format json_schema
// and json_object; llama-server's grammar field; greedy picks the best allowed token; the 400s;
// and a 2-worker cluster answering a forced call exactly like one process.
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

json post_json(int port, const std::string& path, const json& body, int want_status = 200) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60);
  auto res = c.Post(path.c_str(), body.dump(), "application/json");
  REQUIRE(res);
  INFO(res->body);
  REQUIRE(res->status == want_status);
  return json::parse(res->body);
}

const json kWeatherParams = json::parse(R"({"type": "object", "properties": {
    "city": {"type": "string", "maxLength": 12},
    "unit": {"enum": ["celsius", "fahrenheit"]},
    "days": {"type": "integer"},
    "alerts": {"type": "boolean"}},
  "required": ["city", "unit"]})");

json tools() {
  return json::array(
      {json{{"type", "function"},
            {"function",
             {{"name", "get_weather"}, {"description", "Weather in a city"}, {"parameters", kWeatherParams}}}},
       json{{"type", "function"},
            {"function", {{"name", "add"}, {"parameters", json::parse(R"({"type": "object", "properties": {
                               "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]})")}}}}});
}

// Arguments of get_weather as the schema says: required keys, types, no others.
void check_weather_arguments(const std::string& arguments) {
  INFO(arguments);
  const json a = json::parse(arguments);
  REQUIRE(a.is_object());
  REQUIRE(a.contains("city"));
  CHECK(a["city"].is_string());
  CHECK((a["unit"] == "celsius" || a["unit"] == "fahrenheit"));
  if (a.contains("days")) CHECK(a["days"].is_number_integer());
  if (a.contains("alerts")) CHECK(a["alerts"].is_boolean());
  for (const auto& [k, v] : a.items()) CHECK((k == "city" || k == "unit" || k == "days" || k == "alerts"));
}

json forced_weather_request(bool stream, double temperature) {
  return json{{"messages", {{{"role", "user"}, {"content", "What is the weather in Paris?"}}}},
              {"tools", tools()},
              {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}},
              {"max_tokens", 400},
              {"temperature", temperature},
              {"seed", 7},
              {"stream", stream}};
}

void check_forced_call(int port) {
  for (double temperature : {0.0, 1.0}) {
    json r = post_json(port, "/v1/chat/completions", forced_weather_request(false, temperature));
    const json& choice = r["choices"][0];
    CHECK(choice["finish_reason"] == "tool_calls");
    REQUIRE(choice["message"]["tool_calls"].size() == 1);
    const json& call = choice["message"]["tool_calls"][0];
    CHECK(call["type"] == "function");
    CHECK(call["id"].get<std::string>().rfind("call_", 0) == 0);
    CHECK(call["function"]["name"] == "get_weather");
    check_weather_arguments(call["function"]["arguments"].get<std::string>());
    CHECK(choice["message"]["content"].is_null());
  }
}

}  // namespace

TEST_CASE("a forced tool call gives arguments that parse and match the schema (Hermes syntax)", "[api][grammar]") {
  LocalServer s;  // stories260K has no template: chatml, whose tool syntax is Hermes' <tool_call>
  check_forced_call(s.port());

  // tool_choice "required" chooses among all tools; the call names one of them.
  json req = forced_weather_request(false, 1.0);
  req["tool_choice"] = "required";
  json r = post_json(s.port(), "/v1/chat/completions", req);
  const json& call = r["choices"][0]["message"]["tool_calls"][0];
  const std::string name = call["function"]["name"];
  CHECK((name == "get_weather" || name == "add"));
  const json args = json::parse(call["function"]["arguments"].get<std::string>());
  if (name == "add") CHECK((args["a"].is_number_integer() && args["b"].is_number_integer()));
}

TEST_CASE("a forced tool call in the Llama 3 syntax, streamed as delta.tool_calls", "[api][grammar]") {
  baton::api::ServeOptions so;
  so.chat_template = "llama3";
  LocalServer s(so);
  check_forced_call(s.port());

  RawResponse raw = raw_request(s.port(), "POST", "/v1/chat/completions", forced_weather_request(true, 0.0).dump());
  REQUIRE(raw.status == 200);
  std::string arguments, finish;
  int calls = 0;
  for (const std::string& p : sse_payloads(raw.body)) {
    if (p == "[DONE]") continue;
    const json c = json::parse(p);
    const json& choice = c["choices"][0];
    if (choice["delta"].contains("tool_calls")) {
      ++calls;
      const json& tc = choice["delta"]["tool_calls"][0];
      CHECK(tc["index"] == 0);
      CHECK(tc["function"]["name"] == "get_weather");
      arguments += tc["function"]["arguments"].get<std::string>();
    }
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
  }
  CHECK(calls == 1);
  CHECK(finish == "tool_calls");
  check_weather_arguments(arguments);
  // The same greedy answer as the whole response.
  json whole = post_json(s.port(), "/v1/chat/completions", forced_weather_request(false, 0.0));
  CHECK(json::parse(arguments) ==
        json::parse(whole["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>()));
}

TEST_CASE("tool_choice none and auto with tools answer (no 400), and tool results go back into the prompt",
          "[api][grammar]") {
  LocalServer s;
  json req = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
              {"tools", tools()},
              {"tool_choice", "none"},
              {"max_tokens", 8},
              {"temperature", 0}};
  json r = post_json(s.port(), "/v1/chat/completions", req);
  CHECK(r["choices"][0]["message"]["content"].is_string());
  CHECK_FALSE(r["choices"][0]["message"].contains("tool_calls"));
  req["tool_choice"] = "auto";
  post_json(s.port(), "/v1/chat/completions", req);

  // A conversation with an earlier call and its result.
  json history = {
      {"messages",
       {{{"role", "user"}, {"content", "Weather in Oslo?"}},
        {{"role", "assistant"},
         {"content", nullptr},
         {"tool_calls",
          {{{"id", "call_1"},
            {"type", "function"},
            {"function", {{"name", "get_weather"}, {"arguments", R"({"city":"Oslo","unit":"celsius"})"}}}}}}},
        {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "3 degrees"}}}},
      {"tools", tools()},
      {"max_tokens", 4},
      {"temperature", 0}};
  json h = post_json(s.port(), "/v1/chat/completions", history);
  history.erase("tools");
  json without_tools = post_json(s.port(), "/v1/chat/completions", history);
  // The tool descriptions are in the first prompt only.
  CHECK(h["usage"]["prompt_tokens"].get<int>() > without_tools["usage"]["prompt_tokens"].get<int>());
}

TEST_CASE("response_format json_schema and json_object constrain the content", "[api][grammar]") {
  LocalServer s;
  const json schema = json::parse(R"({"type": "object", "properties": {
      "title": {"type": "string", "maxLength": 16},
      "rating": {"type": "integer"},
      "tags": {"type": "array", "items": {"enum": ["fun", "sad"]}, "maxItems": 2}},
    "required": ["title", "rating", "tags"], "additionalProperties": false})");
  for (double temperature : {0.0, 0.8}) {
    json req = {
        {"messages", {{{"role", "user"}, {"content", "Rate a story."}}}},
        {"response_format",
         {{"type", "json_schema"}, {"json_schema", {{"name", "review"}, {"schema", schema}, {"strict", true}}}}},
        {"max_tokens", 300},
        {"temperature", temperature},
        {"seed", 3}};
    json r = post_json(s.port(), "/v1/chat/completions", req);
    CHECK(r["choices"][0]["finish_reason"] == "stop");
    const std::string content = r["choices"][0]["message"]["content"];
    INFO(content);
    const json v = json::parse(content);
    CHECK(v["title"].is_string());
    CHECK(v["rating"].is_number_integer());
    CHECK(v["tags"].size() <= 2);
    CHECK(v.size() == 3);
  }
  // json_object: any object; the generation is cut by max_tokens only if the model never closes
  // it, so only a finished one is parsed.
  json req = {{"messages", {{{"role", "user"}, {"content", "JSON please"}}}},
              {"response_format", {{"type", "json_object"}}},
              {"max_tokens", 200},
              {"temperature", 0}};
  json r = post_json(s.port(), "/v1/chat/completions", req);
  const std::string content = r["choices"][0]["message"]["content"];
  INFO(content);
  REQUIRE(content.rfind("{", 0) == 0);
  if (r["choices"][0]["finish_reason"] == "stop") CHECK(json::parse(content).is_object());
}

TEST_CASE("llama-server's grammar and json_schema fields on /v1/completions, and greedy takes the best allowed token",
          "[api][grammar]") {
  LocalServer s;
  json req = {{"prompt", "Once upon a time"},
              {"grammar", "root ::= (\"yes\" | \"no\" | \"maybe\") \".\""},
              {"max_tokens", 20},
              {"temperature", 0},
              {"logprobs", 3}};
  json r = post_json(s.port(), "/v1/completions", req);
  const std::string text = r["choices"][0]["text"];
  CHECK((text == "yes." || text == "no." || text == "maybe."));
  CHECK(r["choices"][0]["finish_reason"] == "stop");
  // Log-probabilities are over the allowed tokens: the greedy choice is the best of them.
  const json& lp = r["choices"][0]["logprobs"];
  for (size_t i = 0; i < lp["tokens"].size(); ++i) {
    float best = -1e30f;
    for (const auto& [tok, v] : lp["top_logprobs"][i].items()) best = std::max(best, v.get<float>());
    // >=: the legacy shape keys top_logprobs by piece, so a byte token spelling the same piece
    // may overwrite the chosen one's entry.
    CHECK(lp["token_logprobs"][i].get<float>() >= best);
  }
  json js = {
      {"prompt", "Once upon a time"}, {"json_schema", {{"type", "integer"}}}, {"max_tokens", 30}, {"temperature", 0}};
  json rj = post_json(s.port(), "/v1/completions", js);
  const std::string t = rj["choices"][0]["text"];
  INFO(t);
  CHECK(json::parse(t).is_number_integer());
}

TEST_CASE("constraints that cannot be enforced are 400s naming the construct", "[api][grammar]") {
  LocalServer s;
  json chat = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 4}};
  auto error_of = [&](const std::string& path, json body) {
    json e = post_json(s.port(), path, body, 400);
    return e["error"];
  };
  json bad_schema = chat;
  bad_schema["response_format"] = {
      {"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", {{"type", "string"}, {"pattern", "a+"}}}}}};
  json e = error_of("/v1/chat/completions", bad_schema);
  CHECK_THAT(e["message"].get<std::string>(), Catch::Contains("'pattern'"));
  CHECK(e["param"] == "response_format.json_schema.schema");

  json bad_gbnf = {{"prompt", "x"}, {"grammar", "root ::= \"a\" |\nfoo ::= (\"b\"\n"}};
  e = error_of("/v1/completions", bad_gbnf);
  CHECK_THAT(e["message"].get<std::string>(), Catch::Contains("line 2"));
  CHECK(e["param"] == "grammar");

  json unknown_tool = chat;
  unknown_tool["tools"] = tools();
  unknown_tool["tool_choice"] = {{"type", "function"}, {"function", {{"name", "nope"}}}};
  CHECK(error_of("/v1/chat/completions", unknown_tool)["param"] == "tool_choice");

  json bad_tool_schema = chat;
  bad_tool_schema["tools"] = json::array(
      {json{{"type", "function"},
            {"function",
             {{"name", "f"},
              {"parameters", {{"type", "object"}, {"properties", {{"n", {{"type", "integer"}, {"minimum", 3}}}}}}}}}}});
  bad_tool_schema["tool_choice"] = "required";
  e = error_of("/v1/chat/completions", bad_tool_schema);
  CHECK_THAT(e["message"].get<std::string>(), Catch::Contains("function 'f'"));
  CHECK_THAT(e["message"].get<std::string>(), Catch::Contains("'minimum'"));

  json tools_on_completions = {{"prompt", "x"}, {"tools", tools()}};
  CHECK(error_of("/v1/completions", tools_on_completions)["param"] == "tools");
  json unknown_format = chat;
  unknown_format["response_format"] = {{"type", "yaml"}};
  CHECK(error_of("/v1/chat/completions", unknown_format)["param"] == "response_format.type");
}

TEST_CASE("a forced tool call through a 2-worker cluster equals one process's (the mask is applied in the coordinator)",
          "[api][grammar]") {
  const std::string model = stories_path();
  const json req = forced_weather_request(false, 0.0);
  json want;
  {
    LocalServer local;
    want = post_json(local.port(), "/v1/chat/completions", req);
  }
  WorkerProcess w1("node-01", model, {"--insecure"});
  WorkerProcess w2("node-02", model, {"--insecure"});
  const std::string yaml = fmt::format(
      "model: {}\ncluster:\n  insecure: true\n  connect_timeout: 5\n  load_timeout: 20\n  nodes:\n"
      "    - {{ id: node-01, host: 127.0.0.1, port: {}, layers: [0, 1] }}\n"
      "    - {{ id: node-02, host: 127.0.0.1, port: {}, layers: [2, 4] }}\n",
      model, w1.port(), w2.port());
  const std::string yaml_path = temp_dir() + "/cluster.yaml";
  std::ofstream(yaml_path) << yaml;
  CoordinatorProcess c({"--config", yaml_path, "-t", "1"});
  json got = post_json(c.port(), "/v1/chat/completions", req);
  const json& call = got["choices"][0]["message"]["tool_calls"][0];
  check_weather_arguments(call["function"]["arguments"].get<std::string>());
  CHECK(call["function"]["arguments"] == want["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]);
  CHECK(got["usage"] == want["usage"]);
}
