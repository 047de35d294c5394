// The request fields of constrained output and function calling, parsed out of a chat or
// completions body into GenerationRequest::grammar / tools / tool_choice:
//   response_format {type: text | json_object | json_schema, json_schema: {name, schema, strict}}
//   grammar (llama-server: GBNF text), json_schema (llama-server: a schema object)
//   tools [{type: "function", function: {name, description, parameters, strict}}] (chat only)
//   tool_choice "auto" | "none" | "required" | {type: "function", function: {name}}
//   parallel_tool_calls (accepted; a forced call is one call)
// Every refusal is a 400 naming the field; a schema or grammar that cannot be compiled names
// the construct (and, for GBNF, the line and column).
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/api/openai_request.h"

namespace baton::api {

// `j` is the parsed body; `body` its text (re-read with key order kept, for schemas).
void parse_structured_fields(const nlohmann::json& j, std::string_view body, Endpoint endpoint, GenerationRequest& r);

// An assistant message's "tool_calls" ([{id, type: "function", function: {name, arguments}}]).
std::vector<ChatToolCall> parse_message_tool_calls(const nlohmann::json& calls, const std::string& at);

// Whether the output is parsed for tool calls (tools given and tool_choice not "none").
inline bool uses_tools(const GenerationRequest& r) {
  return !r.tools.empty() && r.tool_choice.mode != ToolChoice::Mode::kNone;
}
// The tools a forced call chooses from (all for "required", the named one), empty when not forced.
std::vector<ToolDefinition> forced_tools(const GenerationRequest& r);

}  // namespace baton::api
