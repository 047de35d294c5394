// Tool syntaxes: how tools, earlier calls and tool results are written into the prompt for
// each family, how replies are parsed back into calls, and that a forced call's grammar only
// accepts calls whose arguments match the schema.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "engine/chat/tool_calls.h"
#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/matcher.h"

namespace {

using namespace baton;

const std::vector<ToolDefinition> kTools = {
    {"get_weather", "Weather in a city",
     R"({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})"}};

std::vector<ChatMessage> conversation() {
  ChatMessage call{"assistant", "", {{"call_1", "get_weather", R"({"city": "Oslo"})"}}, ""};
  ChatMessage result{"tool", "3 degrees", {}, "call_1"};
  return {{"system", "Be brief.", {}, ""}, {"user", "Weather in Oslo?", {}, ""}, call, result};
}

bool forced_grammar_accepts(ToolSyntax syntax, const std::string& text) {
  grammar::Matcher m(std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(tool_call_gbnf(syntax, kTools))));
  return m.accept(text) && m.can_end();
}

}  // namespace

TEST_CASE("tool syntax: the family of the chat template picks it", "[chat]") {
  CHECK(tool_syntax_for(ChatFormat::kChatml) == ToolSyntax::kHermes);
  CHECK(tool_syntax_for(ChatFormat::kLlama3) == ToolSyntax::kLlama3);
  CHECK(tool_syntax_for(ChatFormat::kMistralV7) == ToolSyntax::kMistral);
  CHECK(tool_syntax_for(ChatFormat::kGemma) == ToolSyntax::kHermes);  // fallback
}

TEST_CASE("tool syntax: Hermes (Qwen) prompt, parse and forced grammar", "[chat]") {
  auto msgs = render_tool_messages(ToolSyntax::kHermes, conversation(), kTools);
  const std::string prompt = ChatTemplate(ChatFormat::kChatml).apply(msgs, true);
  CHECK_THAT(prompt, Catch::Contains("<|im_start|>system\nBe brief.\n\n# Tools"));
  CHECK_THAT(prompt, Catch::Contains("<tools>\n{\"type\":\"function\",\"function\":{\"name\":\"get_weather\""));
  CHECK_THAT(prompt, Catch::Contains("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                     "{\"city\":\"Oslo\"}}\n</tool_call><|im_end|>"));
  CHECK_THAT(prompt, Catch::Contains("<|im_start|>user\n<tool_response>\n3 degrees\n</tool_response><|im_end|>"));

  auto parsed = parse_tool_output(
      ToolSyntax::kHermes,
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>",
      kTools);
  REQUIRE(parsed.calls.size() == 1);
  CHECK(parsed.calls[0].name == "get_weather");
  CHECK(nlohmann::json::parse(parsed.calls[0].arguments) == nlohmann::json{{"city", "Rome"}});
  CHECK(parsed.content == "Let me check.");
  CHECK(parse_tool_output(ToolSyntax::kHermes, "<tool_call>{\"name\": \"unknown\"}</tool_call>", kTools).calls.empty());
  CHECK(parse_tool_output(ToolSyntax::kHermes, "just text", kTools).content == "just text");

  CHECK(forced_grammar_accepts(
      ToolSyntax::kHermes,
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>"));
  CHECK_FALSE(forced_grammar_accepts(ToolSyntax::kHermes,
                                     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));
}

TEST_CASE("tool syntax: Llama 3 prompt (tools in the first user turn, ipython results), parse and grammar", "[chat]") {
  auto msgs = render_tool_messages(ToolSyntax::kLlama3, conversation(), kTools);
  const std::string prompt = ChatTemplate(ChatFormat::kLlama3).apply(msgs, true);
  CHECK_THAT(prompt, Catch::Contains("<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions"));
  CHECK_THAT(prompt, Catch::Contains("\"name\": \"get_weather\""));
  CHECK_THAT(prompt, Catch::Contains("<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", "
                                     "\"parameters\": {\"city\":\"Oslo\"}}<|eot_id|>"));
  CHECK_THAT(prompt, Catch::Contains("<|start_header_id|>ipython<|end_header_id|>\n\n3 degrees<|eot_id|>"));
  auto parsed = parse_tool_output(ToolSyntax::kLlama3,
                                  " {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}", kTools);
  REQUIRE(parsed.calls.size() == 1);
  CHECK(parsed.content.empty());
  CHECK(
      forced_grammar_accepts(ToolSyntax::kLlama3, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}"));
}

TEST_CASE("tool syntax: Mistral prompt ([AVAILABLE_TOOLS] before the last [INST]), parse and grammar", "[chat]") {
  auto msgs = render_tool_messages(ToolSyntax::kMistral, conversation(), kTools);
  msgs.push_back({"user", "And tomorrow?", {}, ""});
  const std::string prompt =
      finish_tool_prompt(ToolSyntax::kMistral, ChatTemplate(ChatFormat::kMistralV7).apply(msgs, true), kTools);
  const size_t tools_at = prompt.find("[AVAILABLE_TOOLS]");
  REQUIRE(tools_at != std::string::npos);
  CHECK(prompt.find("[INST]", tools_at) == prompt.rfind("[INST]"));
  CHECK_THAT(prompt, Catch::Contains("[TOOL_CALLS][{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\"}}]"));
  CHECK_THAT(prompt,
             Catch::Contains("[TOOL_RESULTS]{\"content\":\"3 degrees\",\"call_id\":\"call_1\"}[/TOOL_RESULTS]"));
  auto parsed = parse_tool_output(
      ToolSyntax::kMistral, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]", kTools);
  REQUIRE(parsed.calls.size() == 1);
  CHECK(forced_grammar_accepts(ToolSyntax::kMistral,
                               "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]"));
}
