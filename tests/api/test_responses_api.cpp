// POST /v1/responses over real HTTP: the response object, the streamed event sequence, the same
// greedy text as the equivalent chat completion, and the 400s for what it refuses.
#include <catch2/catch.hpp>
#include <httplib.h>

#include "api_test_util.h"

namespace {

using nlohmann::json;
using namespace baton::test;

json post_json_expecting(int port, const std::string& path, const json& body, int want_status = 200) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(20);
  auto res = c.Post(path.c_str(), body.dump(), "application/json");
  REQUIRE(res);
  INFO(res->body);
  CHECK(res->status == want_status);
  return json::parse(res->body);
}

// The `event:` names and `data:` objects of a Responses stream.
std::vector<std::pair<std::string, json>> responses_events(const std::string& body) {
  std::vector<std::pair<std::string, json>> out;
  size_t pos = 0;
  while ((pos = body.find("event: ", pos)) != std::string::npos) {
    const size_t eol = body.find('\n', pos);
    const size_t data = body.find("data: ", eol);
    const size_t end = body.find("\n\n", data);
    REQUIRE(eol != std::string::npos);
    REQUIRE(end != std::string::npos);
    out.emplace_back(body.substr(pos + 7, eol - pos - 7), json::parse(body.substr(data + 6, end - data - 6)));
    pos = end + 2;
  }
  return out;
}

}  // namespace

TEST_CASE("POST /v1/responses answers with OpenAI's response object and the chat completion's greedy text", "[api]") {
  LocalServer server;
  const json chat = post_json_expecting(server.port(), "/v1/chat/completions",
                                        {{"messages",
                                          {{{"role", "system"}, {"content", "You tell stories."}},
                                           {{"role", "user"}, {"content", "Tell me about a cat."}}}},
                                         {"max_tokens", 10},
                                         {"temperature", 0}});
  const json r = post_json_expecting(
      server.port(), "/v1/responses",
      {{"model", "x"},
       {"instructions", "You tell stories."},
       {"input", {{{"role", "user"}, {"content", {{{"type", "input_text"}, {"text", "Tell me about a cat."}}}}}}},
       {"max_output_tokens", 10},
       {"temperature", 0}});
  CHECK(r["object"] == "response");
  CHECK(r["id"].get<std::string>().starts_with("resp_"));
  CHECK(r["created_at"].is_number_integer());
  CHECK(r["status"] == "incomplete");
  CHECK(r["incomplete_details"]["reason"] == "max_output_tokens");
  CHECK(r["model"] == "stories260K");
  CHECK(r["instructions"] == "You tell stories.");
  CHECK(r["max_output_tokens"] == 10);
  CHECK(r["store"] == false);
  CHECK(r["error"].is_null());
  REQUIRE(r["output"].size() == 1);
  const json& msg = r["output"][0];
  CHECK(msg["type"] == "message");
  CHECK(msg["role"] == "assistant");
  CHECK(msg["id"].get<std::string>().starts_with("msg_"));
  REQUIRE(msg["content"].size() == 1);
  CHECK(msg["content"][0]["type"] == "output_text");
  CHECK(msg["content"][0]["annotations"] == json::array());
  CHECK(msg["content"][0]["text"] == chat["choices"][0]["message"]["content"]);
  CHECK(r["usage"]["input_tokens"] == chat["usage"]["prompt_tokens"]);
  CHECK(r["usage"]["output_tokens"] == 10);
  CHECK(r["usage"]["total_tokens"] == chat["usage"]["total_tokens"]);
  CHECK(r["usage"]["input_tokens_details"]["cached_tokens"] == 0);

  // A plain string input is one user message; a stop string ends it as "completed".
  const json plain =
      post_json_expecting(server.port(), "/v1/responses",
                          {{"input", "Tell me about a cat."}, {"max_output_tokens", 10}, {"temperature", 0}});
  const std::string text = plain["output"][0]["content"][0]["text"];
  REQUIRE(text.size() > 4);
  const json stopped = post_json_expecting(
      server.port(), "/v1/responses",
      {{"input", "Tell me about a cat."}, {"max_output_tokens", 10}, {"temperature", 0}, {"stop", text.substr(3, 2)}});
  CHECK(stopped["status"] == "completed");
  CHECK(stopped["incomplete_details"].is_null());
  CHECK(stopped["output"][0]["status"] == "completed");
  CHECK(stopped["output"][0]["content"][0]["text"] == text.substr(0, text.find(text.substr(3, 2))));
}

TEST_CASE("a streamed response sends the Responses events in order and adds up to the whole text", "[api]") {
  LocalServer server;
  const json body = {{"input", "Once upon a time"}, {"max_output_tokens", 12}, {"temperature", 0}};
  const json whole = post_json_expecting(server.port(), "/v1/responses", body);
  json streaming = body;
  streaming["stream"] = true;
  RawResponse raw = raw_request(server.port(), "POST", "/v1/responses", streaming.dump());
  REQUIRE(raw.status == 200);
  CHECK(raw.headers.find("text/event-stream") != std::string::npos);
  CHECK(raw.body.find("[DONE]") == std::string::npos);
  const auto events = responses_events(raw.body);
  REQUIRE(events.size() >= 9);
  const std::vector<std::string> head = {"response.created", "response.in_progress", "response.output_item.added",
                                         "response.content_part.added"};
  const std::vector<std::string> tail = {"response.output_text.done", "response.content_part.done",
                                         "response.output_item.done", "response.incomplete"};
  std::string text;
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& [name, data] = events[i];
    INFO(i << ": " << data.dump());
    CHECK(data["type"] == name);
    CHECK(data["sequence_number"] == i);
    if (i < head.size()) CHECK(name == head[i]);
    else if (i >= events.size() - tail.size()) CHECK(name == tail[i - (events.size() - tail.size())]);
    else {
      CHECK(name == "response.output_text.delta");
      CHECK(data["output_index"] == 0);
      CHECK(data["content_index"] == 0);
      text += data["delta"].get<std::string>();
    }
  }
  const std::string want = whole["output"][0]["content"][0]["text"];
  CHECK(text == want);
  CHECK(events[0].second["response"]["status"] == "in_progress");
  CHECK(events[2].second["item"]["id"] == events[4].second["item_id"]);
  CHECK(events[events.size() - 4].second["text"] == want);
  const json& final = events.back().second["response"];
  CHECK(final["status"] == "incomplete");
  CHECK(final["output"][0]["content"][0]["text"] == want);
  CHECK(final["usage"] == whole["usage"]);
  CHECK(final["id"] == events[0].second["response"]["id"]);
}

TEST_CASE("/v1/responses refuses stored state, non-text input and non-function tools with a 400 naming the field",
          "[api]") {
  LocalServer server;
  const auto refused = [&](json body, const std::string& param) {
    body["input"] = body.value("input", json("Hi"));
    const json r = post_json_expecting(server.port(), "/v1/responses", body, 400);
    INFO(r.dump());
    CHECK(r["error"]["param"] == param);
    CHECK(r["error"]["type"] == "invalid_request_error");
  };
  refused({{"previous_response_id", "resp_1"}}, "previous_response_id");
  refused({{"store", true}}, "store");
  refused({{"conversation", "conv_1"}}, "conversation");
  refused({{"background", true}}, "background");
  refused({{"tools", {{{"type", "web_search"}}}}}, "tools[0].type");
  refused({{"tools", {{{"type", "function"}, {"name", "f"}}}}, {"tool_choice", {{"type", "function"}, {"name", "g"}}}},
          "tool_choice");
  refused({{"tool_choice", {{"type", "file_search"}}}}, "tool_choice");
  refused({{"text", {{"format", {{"type", "xml"}}}}}}, "text.format.type");
  refused({{"input", {{{"role", "user"}, {"content", {{{"type", "input_image"}, {"image_url", "x"}}}}}}}},
          "input[0].content[0].type");
  refused({{"input", {{{"type", "item_reference"}, {"id", "msg_1"}}}}}, "input[0].type");
  refused({{"input", {{{"type", "function_call_output"}, {"output", "x"}}}}}, "input[0].call_id");
  refused({{"input", {{{"role", "tool"}, {"content", "x"}}}}}, "input[0].role");
  refused({{"input", json::array()}}, "input");
  refused({{"max_output_tokens", 0}}, "max_output_tokens");
  refused({{"temperature", 3}}, "temperature");
  json no_input = post_json_expecting(server.port(), "/v1/responses", {{"model", "x"}}, 400);
  CHECK(no_input["error"]["param"] == "input");
  // Accepted as OpenAI's clients send them: store false, empty tools, text format "text".
  post_json_expecting(server.port(), "/v1/responses",
                      {{"input", "Hi"},
                       {"max_output_tokens", 2},
                       {"store", false},
                       {"tools", json::array()},
                       {"tool_choice", "auto"},
                       {"text", {{"format", {{"type", "text"}}}}},
                       {"metadata", {{"k", "v"}}}});
}
