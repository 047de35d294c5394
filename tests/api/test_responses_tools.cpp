// Function tools and JSON output through POST /v1/responses over real HTTP (stories260K, whose
// text is nothing like JSON, so only the grammar makes these pass): a forced call comes back as
// a function_call output item whose arguments parse and match the schema, streamed as the
// function_call events; function_call / function_call_output input items go back into the
// prompt for the next turn; text.format json_schema / json_object constrain the message text.
#include <catch2/catch.hpp>
#include <httplib.h>

#include "api_test_util.h"

namespace {

using nlohmann::json;
using namespace baton::test;

json post_responses(int port, const json& body, int want_status = 200) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60);
  auto res = c.Post("/v1/responses", body.dump(), "application/json");
  REQUIRE(res);
  INFO(res->body);
  REQUIRE(res->status == want_status);
  return json::parse(res->body);
}

std::string post_responses_stream(int port, const json& body) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60);
  auto res = c.Post("/v1/responses", body.dump(), "application/json");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  return res->body;
}

// The `event:` names and `data:` objects of a Responses stream.
std::vector<std::pair<std::string, json>> stream_events_of(const std::string& body) {
  std::vector<std::pair<std::string, json>> out;
  size_t pos = 0;
  while ((pos = body.find("event: ", pos)) != std::string::npos) {
    const size_t eol = body.find('\n', pos);
    const size_t data = body.find("data: ", eol);
    const size_t end = body.find("\n\n", data);
    REQUIRE(end != std::string::npos);
    out.emplace_back(body.substr(pos + 7, eol - pos - 7), json::parse(body.substr(data + 6, end - data - 6)));
    pos = end + 2;
  }
  return out;
}

// Responses' flat function tool shape.
json responses_weather_tool() {
  return json{{"type", "function"},
              {"name", "get_weather"},
              {"description", "Weather in a city"},
              {"parameters", json::parse(R"({"type": "object", "properties": {
                  "city": {"type": "string", "maxLength": 12},
                  "unit": {"enum": ["celsius", "fahrenheit"]},
                  "days": {"type": "integer"}},
                "required": ["city", "unit"], "additionalProperties": false})")},
              {"strict", true}};
}

void check_responses_weather_args(const std::string& arguments) {
  INFO(arguments);
  const json a = json::parse(arguments);
  REQUIRE(a.is_object());
  CHECK(a["city"].is_string());
  CHECK((a["unit"] == "celsius" || a["unit"] == "fahrenheit"));
  if (a.contains("days")) CHECK(a["days"].is_number_integer());
  for (const auto& [k, v] : a.items()) CHECK((k == "city" || k == "unit" || k == "days"));
}

json forced_weather(bool stream) {
  return json{{"input", "What is the weather in Paris?"},
              {"tools", json::array({responses_weather_tool()})},
              {"tool_choice", {{"type", "function"}, {"name", "get_weather"}}},
              {"max_output_tokens", 300},
              {"temperature", 0.8},
              {"seed", 3},
              {"stream", stream}};
}

}  // namespace

TEST_CASE("a forced call through /v1/responses is a function_call item whose arguments match the schema",
          "[api][grammar]") {
  LocalServer server;
  const json r = post_responses(server.port(), forced_weather(false));
  CHECK(r["status"] == "completed");
  REQUIRE(r["output"].size() == 1);
  const json& item = r["output"][0];
  CHECK(item["type"] == "function_call");
  CHECK(item["status"] == "completed");
  CHECK(item["name"] == "get_weather");
  CHECK(item["id"].get<std::string>().starts_with("fc_"));
  CHECK(item["call_id"].get<std::string>().starts_with("call_"));
  check_responses_weather_args(item["arguments"].get<std::string>());
  // The request's tools and tool_choice are echoed as sent.
  CHECK(r["tools"][0]["name"] == "get_weather");
  CHECK(r["tool_choice"]["name"] == "get_weather");
  // tool_choice "required" forces a call too.
  json required = forced_weather(false);
  required["tool_choice"] = "required";
  const json r2 = post_responses(server.port(), required);
  REQUIRE(r2["output"].size() == 1);
  CHECK(r2["output"][0]["type"] == "function_call");
  check_responses_weather_args(r2["output"][0]["arguments"].get<std::string>());
}

TEST_CASE("a streamed forced call through /v1/responses sends the function_call events", "[api][grammar]") {
  LocalServer server;
  const auto events = stream_events_of(post_responses_stream(server.port(), forced_weather(true)));
  std::vector<std::string> types;
  for (const auto& [type, data] : events) types.push_back(type);
  const std::vector<std::string> want = {"response.created",
                                         "response.in_progress",
                                         "response.output_item.added",
                                         "response.function_call_arguments.delta",
                                         "response.function_call_arguments.done",
                                         "response.output_item.done",
                                         "response.completed"};
  CHECK(types == want);
  for (size_t i = 0; i < events.size(); ++i) CHECK(events[i].second["sequence_number"] == i);
  REQUIRE(events.size() == want.size());
  const json& added = events[2].second["item"];
  CHECK(added["type"] == "function_call");
  CHECK(added["name"] == "get_weather");
  CHECK(added["arguments"] == "");
  const std::string args = events[3].second["delta"].get<std::string>();
  check_responses_weather_args(args);
  CHECK(events[4].second["arguments"] == args);
  CHECK(events[5].second["item"]["arguments"] == args);
  CHECK(events[5].second["item"]["id"] == added["id"]);
  CHECK(events[6].second["response"]["output"][0]["call_id"] == added["call_id"]);
}

TEST_CASE("function_call and function_call_output input items go back into the prompt", "[api][grammar]") {
  LocalServer server;
  const json call = post_responses(server.port(), forced_weather(false))["output"][0];
  json next = {{"input",
                {{{"role", "user"}, {"content", "What is the weather in Paris?"}},
                 {{"type", "function_call"},
                  {"call_id", call["call_id"]},
                  {"name", "get_weather"},
                  {"arguments", call["arguments"]}},
                 {{"type", "function_call_output"}, {"call_id", call["call_id"]}, {"output", "Sunny, 21 C"}}}},
               {"tools", json::array({responses_weather_tool()})},
               {"max_output_tokens", 4},
               {"temperature", 0}};
  const json r = post_responses(server.port(), next);
  REQUIRE(r["output"].size() >= 1);
  const json first_usage = r["usage"];
  // The tool's result is in the prompt: a longer result means more input tokens.
  next["input"][2]["output"] = "Sunny, 21 C, light wind from the west, no rain expected this week";
  const json longer = post_responses(server.port(), next);
  CHECK(longer["usage"]["input_tokens"].get<int>() > first_usage["input_tokens"].get<int>());
  // tool_choice "none": the tools are not described and the answer is text.
  next["tool_choice"] = "none";
  const json text = post_responses(server.port(), next);
  CHECK(text["output"][0]["type"] == "message");
  CHECK(text["usage"]["input_tokens"].get<int>() < longer["usage"]["input_tokens"].get<int>());
}

TEST_CASE("text.format json_schema and json_object constrain the /v1/responses text", "[api][grammar]") {
  LocalServer server;
  const json schema = json::parse(R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 10}, "age": {"type": "integer"}, "indoor": {"type": "boolean"}},
    "required": ["name", "age", "indoor"], "additionalProperties": false})");
  for (bool stream : {false, true}) {
    json body = {
        {"input", "Describe a cat."},
        {"max_output_tokens", 300},
        {"temperature", 0.7},
        {"seed", 11},
        {"stream", stream},
        {"text", {{"format", {{"type", "json_schema"}, {"name", "cat"}, {"schema", schema}, {"strict", true}}}}}};
    std::string text;
    if (stream) {
      const auto events = stream_events_of(post_responses_stream(server.port(), body));
      REQUIRE(!events.empty());
      CHECK(events.back().first == "response.completed");
      text = events.back().second["response"]["output"][0]["content"][0]["text"].get<std::string>();
      CHECK(events.back().second["response"]["text"]["format"]["type"] == "json_schema");
    } else {
      const json r = post_responses(server.port(), body);
      CHECK(r["status"] == "completed");
      text = r["output"][0]["content"][0]["text"].get<std::string>();
      CHECK(r["text"]["format"]["name"] == "cat");
    }
    INFO(text);
    const json v = json::parse(text);
    CHECK(v["name"].is_string());
    CHECK(v["age"].is_number_integer());
    CHECK(v["indoor"].is_boolean());
    CHECK(v.size() == 3);
  }
  const json obj = post_responses(server.port(), {{"input", "Describe a cat."},
                                                  {"max_output_tokens", 200},
                                                  {"temperature", 0.7},
                                                  {"seed", 2},
                                                  {"text", {{"format", {{"type", "json_object"}}}}}});
  if (obj["status"] == "completed")
    CHECK(json::parse(obj["output"][0]["content"][0]["text"].get<std::string>()).is_object());
  // A construct the grammar cannot express names Responses' field.
  const json bad = post_responses(
      server.port(),
      {{"input", "x"},
       {"text",
        {{"format", {{"type", "json_schema"}, {"name", "x"}, {"schema", {{"type", "string"}, {"pattern", "^a"}}}}}}}},
      400);
  CHECK(bad["error"]["param"] == "text.format.schema");
  CHECK(bad["error"]["message"].get<std::string>().find("'pattern'") != std::string::npos);
}
