#include "engine/api/constrained_generation.h"

#include <fmt/format.h>

#include "engine/api/api_error.h"
#include "engine/api/structured_request.h"

namespace baton::api {

using nlohmann::json;

std::string chat_prompt_text(const GenerationRequest& r, const ChatTemplate& tmpl) {
  const ToolSyntax syntax = tool_syntax_for(tmpl.format());
  const std::vector<ToolDefinition> shown = uses_tools(r) ? r.tools : std::vector<ToolDefinition>{};
  const std::vector<ChatMessage> messages = render_tool_messages(syntax, r.messages, shown);
  return finish_tool_prompt(syntax, tmpl.apply(messages, /*add_generation_prompt=*/true), shown);
}

std::shared_ptr<const grammar::CompiledConstraint> build_constraint(const GenerationRequest& r,
                                                                    const ChatTemplate* tmpl,
                                                                    const tokenizer::Tokenizer& tokenizer) {
  std::string gbnf = r.grammar;
  const char* param = "grammar";
  const std::vector<ToolDefinition> forced = forced_tools(r);
  if (!forced.empty() && tmpl) {
    param = "tools";
    try {
      gbnf = tool_call_gbnf(tool_syntax_for(tmpl->format()), forced);
    } catch (const grammar::GrammarError& e) {
      throw bad_request("tools", fmt::format("the forced tool call cannot be enforced: {}", e.what()));
    }
  }
  if (gbnf.empty()) return nullptr;
  try {
    return grammar::CompiledConstraint::build(gbnf, tokenizer);
  } catch (const grammar::GrammarError& e) {
    throw bad_request(param, e.what());
  }
}

namespace {

json call_json(const ChatToolCall& c) {
  return json{{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}};
}

}  // namespace

void attach_tool_calls(json& body, const GenerationRequest& r, const ChatTemplate& tmpl) {
  if (!uses_tools(r)) return;
  json& choice = body["choices"][0];
  json& message = choice["message"];
  const std::string text = message.value("content", "");
  ParsedToolOutput parsed = parse_tool_output(tool_syntax_for(tmpl.format()), text, r.tools);
  if (parsed.calls.empty()) return;
  message["content"] = parsed.content.empty() ? json(nullptr) : json(parsed.content);
  json calls = json::array();
  for (const auto& c : parsed.calls) calls.push_back(call_json(c));
  message["tool_calls"] = calls;
  choice["finish_reason"] = "tool_calls";
}

std::vector<json> tool_stream_chunks(const std::string& text, json final_chunk, const GenerationRequest& r,
                                     const ChatTemplate& tmpl) {
  std::vector<json> out;
  ParsedToolOutput parsed = parse_tool_output(tool_syntax_for(tmpl.format()), text, r.tools);
  auto delta_chunk = [&](json delta) {
    json c = final_chunk;
    c["choices"][0]["delta"] = std::move(delta);
    c["choices"][0]["finish_reason"] = nullptr;
    return c;
  };
  if (!parsed.content.empty()) out.push_back(delta_chunk(json{{"content", parsed.content}}));
  for (size_t i = 0; i < parsed.calls.size(); ++i) {
    json call = call_json(parsed.calls[i]);
    call["index"] = i;
    out.push_back(delta_chunk(json{{"tool_calls", json::array({call})}}));
  }
  if (!parsed.calls.empty()) final_chunk["choices"][0]["finish_reason"] = "tool_calls";
  out.push_back(std::move(final_chunk));
  return out;
}

}  // namespace baton::api
