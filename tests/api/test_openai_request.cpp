// The pure parts of the API: request parsing (defaults, field precedence, every error naming its
// field) and the Prometheus text of a histogram.
#include <catch2/catch.hpp>

#include "engine/api/api_error.h"
#include "engine/api/metrics.h"
#include "engine/api/openai_request.h"

namespace {

using baton::api::ApiError;
using baton::api::Endpoint;
using baton::api::parse_generation_request;

std::string param_of(const std::string& body, Endpoint e = Endpoint::kCompletions) {
  try {
    parse_generation_request(body, e, 7);
  } catch (const ApiError& err) {
    CHECK(err.status() == 400);
    return err.param();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("completion requests get OpenAI's and llama.cpp's defaults", "[api]") {
  auto r = parse_generation_request(R"({"prompt":"hi"})", Endpoint::kCompletions, 1234);
  CHECK(r.prompt.is_text);
  CHECK(r.prompt.text == "hi");
  CHECK(r.engine.max_tokens == 16);
  CHECK(r.engine.sampling.temperature == Approx(0.8f));
  CHECK(r.engine.sampling.top_k == 40);
  CHECK(r.engine.sampling.seed == 1234u);  // the server's random seed when none is given
  CHECK_FALSE(r.stream);
  CHECK_FALSE(r.logprobs);
  auto chat = parse_generation_request(R"({"messages":[{"role":"user","content":"x"}]})", Endpoint::kChat, 1);
  CHECK(chat.engine.max_tokens == -1);  // until end of generation
  REQUIRE(chat.messages.size() == 1);
  CHECK(chat.messages[0].role == "user");
}

TEST_CASE("request fields are read with their precedence and conversions", "[api]") {
  auto r = parse_generation_request(
      R"({"messages":[{"role":"developer","content":"s"},{"role":"assistant","content":null},
          {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
          "max_tokens":5,"max_completion_tokens":9,"seed":4294967297,"stop":"END","temperature":null,
          "logprobs":true,"top_logprobs":3,"stream":true,"stream_options":{"include_usage":true}})",
      Endpoint::kChat, 1);
  CHECK(r.messages[0].role == "system");
  CHECK(r.messages[1].content.empty());
  CHECK(r.messages[2].content == "ab");
  CHECK(r.engine.max_tokens == 9);
  CHECK(r.engine.sampling.seed == 1u);  // the low 32 bits
  CHECK(r.engine.stop == std::vector<std::string>{"END"});
  CHECK(r.engine.sampling.temperature == Approx(0.8f));  // null = absent
  CHECK(r.engine.logprobs);
  CHECK(r.engine.n_top_logprobs == 3);
  CHECK(r.stream);
  CHECK(r.include_usage);
  auto c = parse_generation_request(R"({"prompt":[[1,2,3]],"logprobs":2,"stop":["a",""]})", Endpoint::kCompletions, 1);
  CHECK_FALSE(c.prompt.is_text);
  CHECK(c.prompt.tokens == std::vector<int32_t>{1, 2, 3});
  CHECK(c.engine.n_top_logprobs == 2);
  CHECK(c.engine.stop == std::vector<std::string>{"a"});  // empty stop strings are dropped
}

TEST_CASE("speculative n_max and n_min are read as llama-server's dotted keys or one object", "[api]") {
  auto dotted = parse_generation_request(R"({"prompt":"hi","speculative.n_max":3,"speculative.n_min":1})",
                                         Endpoint::kCompletions, 1);
  CHECK(dotted.engine.draft_max == 3);
  CHECK(dotted.engine.draft_min == 1);
  auto object = parse_generation_request(R"({"prompt":"hi","speculative":{"n_max":0}})", Endpoint::kCompletions, 1);
  CHECK(object.engine.draft_max == 0);
  CHECK(object.engine.draft_min == -1);  // the server's
  auto absent = parse_generation_request(R"({"prompt":"hi"})", Endpoint::kCompletions, 1);
  CHECK(absent.engine.draft_max == -1);
  CHECK_THROWS_AS(parse_generation_request(R"({"prompt":"hi","speculative.n_max":65})", Endpoint::kCompletions, 1),
                  ApiError);
  CHECK_THROWS_AS(parse_generation_request(R"({"prompt":"hi","speculative":3})", Endpoint::kCompletions, 1), ApiError);
}

TEST_CASE("logit_bias is read in OpenAI's object and llama-server's pair forms, false bans", "[api]") {
  auto r = parse_generation_request(R"({"prompt":"x","logit_bias":{"15":2.5,"3":false}})", Endpoint::kCompletions, 1);
  using Bias = std::vector<std::pair<int32_t, float>>;
  CHECK(r.engine.sampling.logit_bias == Bias{{15, 2.5f}, {3, -std::numeric_limits<float>::infinity()}});
  r = parse_generation_request(R"({"prompt":"x","logit_bias":[[7,-100],[8,false]]})", Endpoint::kCompletions, 1);
  CHECK(r.engine.sampling.logit_bias == Bias{{7, -100.0f}, {8, -std::numeric_limits<float>::infinity()}});
  // Accepted no-op forms of the unsupported fields.
  r = parse_generation_request(R"({"prompt":"x","best_of":1,"response_format":{"type":"text"},"tools":[]})",
                               Endpoint::kCompletions, 1);
  CHECK(r.engine.sampling.logit_bias.empty());
}

TEST_CASE("every rejected field is named in the error", "[api]") {
  CHECK(param_of("") == "body");
  CHECK(param_of("nul") == "body");
  CHECK(param_of(R"("text")") == "body");
  CHECK(param_of(R"({"prompt":"x","temperature":1e309})") == "body");  // beyond double: not a 500
  CHECK(param_of(R"({"prompt":"x","logit_bias":5})") == "logit_bias");
  CHECK(param_of(R"({"prompt":"x","logit_bias":{"abc":1}})") == "logit_bias.abc");
  CHECK(param_of(R"({"prompt":"x","logit_bias":{"-3":1}})") == "logit_bias.-3");
  CHECK(param_of(R"({"prompt":"x","logit_bias":{"7":101}})") == "logit_bias.7");
  CHECK(param_of(R"({"prompt":"x","logit_bias":{"7":true}})") == "logit_bias.7");
  CHECK(param_of(R"({"prompt":"x","logit_bias":[[1]]})") == "logit_bias[0]");
  CHECK(param_of(R"({"prompt":"x","best_of":2})") == "best_of");
  CHECK(param_of(R"({"prompt":"x","response_format":{"type":"yaml"}})") == "response_format.type");
  CHECK(param_of(R"({"prompt":"x","tools":[{"type":"function"}]})") == "tools");  // chat only
  CHECK(param_of(R"({"prompt":"x","grammar":"root ::= undefined"})") == "grammar");
  CHECK(param_of(R"({"prompt":"x","json_schema":{"type":"string","pattern":"a"}})") == "json_schema");
  CHECK(param_of(R"({"prompt":{}})") == "prompt");
  CHECK(param_of(R"({"prompt":[]})") == "prompt");
  CHECK(param_of(R"({"prompt":[[]]})") == "prompt[0]");
  CHECK(param_of(R"({"prompt":[1,"a"]})") == "prompt[1]");
  CHECK(param_of(R"({"prompt":[4294967296]})") == "prompt[0]");
  CHECK(param_of(R"({"prompt":"x","top_k":-1})") == "top_k");
  CHECK(param_of(R"({"prompt":"x","min_p":"0.1"})") == "min_p");
  CHECK(param_of(R"({"prompt":"x","presence_penalty":3})") == "presence_penalty");
  CHECK(param_of(R"({"prompt":"x","frequency_penalty":[]})") == "frequency_penalty");
  CHECK(param_of(R"({"prompt":"x","seed":1.5})") == "seed");
  CHECK(param_of(R"({"prompt":"x","max_tokens":18446744073709551615})") == "max_tokens");
  CHECK(param_of(R"({"prompt":"x","logprobs":21})") == "logprobs");
  CHECK(param_of(R"({"prompt":"x","stream_options":{"include_usage":1}})") == "stream_options.include_usage");
  CHECK(param_of(R"({"prompt":"x","echo":true})") == "echo");
  CHECK(param_of(R"({"prompt":"x","n":1})") == "(accepted)");
  CHECK(param_of(R"({"messages":[]})", Endpoint::kChat) == "messages");
  CHECK(param_of(R"({"messages":[5]})", Endpoint::kChat) == "messages[0]");
  CHECK(param_of(R"({"messages":[{"content":"x"}]})", Endpoint::kChat) == "messages[0].role");
  CHECK(param_of(R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})", Endpoint::kChat) ==
        "messages[0].content[0].type");
  CHECK(param_of(R"({"messages":[{"role":"user","content":"x"}],"logprobs":1})", Endpoint::kChat) == "logprobs");
}

TEST_CASE("tokenize and detokenize bodies are checked", "[api]") {
  auto t = baton::api::parse_tokenize_request(R"({"content":"a","add_special":true,"with_pieces":true})");
  CHECK(t.content == "a");
  CHECK(t.add_special);
  CHECK(t.with_pieces);
  CHECK_THROWS_AS(baton::api::parse_tokenize_request(R"({"add_special":true})"), ApiError);
  CHECK(baton::api::parse_detokenize_request(R"({"tokens":[5,6]})") == std::vector<int32_t>{5, 6});
  CHECK_THROWS_AS(baton::api::parse_detokenize_request(R"({"tokens":[1.5]})"), ApiError);
}

TEST_CASE("histograms are written with cumulative buckets, sum and count", "[api]") {
  baton::api::Histogram h({0.1, 1});
  h.observe(0.05);
  h.observe(0.1);
  h.observe(0.5);
  h.observe(7);
  std::string out;
  h.write(out, "x_seconds");
  CHECK(out ==
        "x_seconds_bucket{le=\"0.1\"} 2\nx_seconds_bucket{le=\"1\"} 3\nx_seconds_bucket{le=\"+Inf\"} 4\n"
        "x_seconds_sum 7.65\nx_seconds_count 4\n");
  CHECK(baton::api::escape_label("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
}

TEST_CASE("structured output and tool fields are parsed into a grammar, tools and tool_choice", "[api]") {
  auto chat = [](const std::string& extra) {
    return parse_generation_request(R"({"messages":[{"role":"user","content":"hi"}],)" + extra + "}", Endpoint::kChat,
                                    1);
  };
  CHECK(chat(R"("response_format":{"type":"json_object"})").grammar.find("root ::=") != std::string::npos);
  auto r = chat(R"("response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"integer"}}})");
  CHECK(r.grammar.find("root ::= integer") != std::string::npos);
  r = chat(
      R"("tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}}}}}],"tool_choice":"required")");
  REQUIRE(r.tools.size() == 1);
  CHECK(r.tools[0].name == "f");
  CHECK(r.tools[0].parameters.find("\"z\"") < r.tools[0].parameters.find("\"a\""));  // property order kept
  CHECK(r.tool_choice.mode == baton::ToolChoice::Mode::kRequired);
  r = chat(
      R"("tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}})");
  CHECK(r.tool_choice.mode == baton::ToolChoice::Mode::kNamed);
  r = chat(R"("tool_choice":"none")");
  CHECK(r.tool_choice.mode == baton::ToolChoice::Mode::kNone);
  r = parse_generation_request(
      R"({"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]})",
      Endpoint::kChat, 1);
  REQUIRE(r.messages.size() == 3);
  REQUIRE(r.messages[1].tool_calls.size() == 1);
  CHECK(r.messages[1].tool_calls[0].arguments == "{\"a\":1}");
  CHECK(r.messages[2].role == "tool");
  CHECK(r.messages[2].tool_call_id == "c1");

  auto param = [&](const std::string& extra) {
    try {
      chat(extra);
    } catch (const baton::api::ApiError& e) {
      return e.param();
    }
    return std::string("(accepted)");
  };
  CHECK(param(R"("tool_choice":"required")") == "tool_choice");  // no tools
  CHECK(param(R"("tools":[{"type":"retrieval"}])") == "tools[0].type");
  CHECK(param(R"("tools":[{"type":"function","function":{"name":"bad name"}}])") == "tools[0].function.name");
  CHECK(param(R"("grammar":"root ::= \"a\"","json_schema":{"type":"string"})") == "json_schema");  // only one
}
