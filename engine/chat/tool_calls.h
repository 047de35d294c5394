// Function calling in the chat template's own tool format. Three syntaxes, chosen from the
// template family:
//   Hermes (chatml: Qwen2.5/Qwen3 and the fallback for families without one): tools listed
//     in <tools></tools> in the system turn; calls <tool_call>\n{"name": .., "arguments": {..}}
//     \n</tool_call>; results in a user turn as <tool_response>\n..\n</tool_response>.
//   Llama 3 (llama3 family, 3.1+): tools listed as JSON in the first user turn; a call is the
//     whole reply, {"name": .., "parameters": {..}}; results in an "ipython" turn.
//   Mistral (mistral-v1/v3/v7): [AVAILABLE_TOOLS][..][/AVAILABLE_TOOLS] before the last
//     [INST]; calls [TOOL_CALLS][{"name": .., "arguments": {..}}]; results in a user turn as
//     [TOOL_RESULTS]{"content": ..}[/TOOL_RESULTS].
// The messages are rewritten into plain system/user/assistant(/ipython) messages that the
// ChatTemplate then formats; the model's output is parsed back into calls; a forced call is
// generated under tool_call_gbnf() so its arguments always match the function's schema.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/chat_template.h"

namespace baton {

struct ToolDefinition {
  std::string name;
  std::string description;
  std::string parameters;  // JSON schema text ({"type": "object", ...})
};

// OpenAI's tool_choice.
struct ToolChoice {
  enum class Mode { kAuto, kNone, kRequired, kNamed };
  Mode mode = Mode::kAuto;
  std::string name;  // kNamed
};

enum class ToolSyntax { kHermes, kLlama3, kMistral };

ToolSyntax tool_syntax_for(ChatFormat format);
std::string_view tool_syntax_name(ToolSyntax syntax);

// `messages` (which may hold "tool" messages and assistant tool_calls) as messages the
// template formats, with `tools` described where the syntax puts them (none: not described).
std::vector<ChatMessage> render_tool_messages(ToolSyntax syntax, std::span<const ChatMessage> messages,
                                              std::span<const ToolDefinition> tools);
// The formatted prompt with what the syntax puts outside the messages (Mistral's tool list).
std::string finish_tool_prompt(ToolSyntax syntax, std::string prompt, std::span<const ToolDefinition> tools);

// GBNF for exactly one call of one of `tools` (its arguments under its parameter schema).
// Throws grammar::GrammarError naming the function and the schema construct it cannot express.
std::string tool_call_gbnf(ToolSyntax syntax, std::span<const ToolDefinition> tools);

struct ParsedToolOutput {
  std::string content;              // text outside the calls
  std::vector<ChatToolCall> calls;  // ids are "call_" + 24 random characters
};
// The calls in a model's reply. Text that does not parse as a call (or names no tool in
// `tools`) stays content.
ParsedToolOutput parse_tool_output(ToolSyntax syntax, std::string_view text, std::span<const ToolDefinition> tools);

}  // namespace baton
