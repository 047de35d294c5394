// The three tool syntaxes: prompt side (describe the tools, replay earlier calls and their
// results) and output side (the grammar of a forced call, parsing calls back out of text).
#include "engine/chat/tool_calls.h"

#include <fmt/format.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "engine/grammar/grammar.h"
#include "engine/grammar/json_schema.h"

namespace baton {
namespace {

using json = nlohmann::ordered_json;

json parameters_of(const ToolDefinition& t) {
  if (t.parameters.empty()) return json{{"type", "object"}, {"properties", json::object()}};
  return json::parse(t.parameters);
}

// OpenAI's tool entry: {"type": "function", "function": {"name", "description", "parameters"}}.
json tool_entry(const ToolDefinition& t) {
  json f{{"name", t.name}};
  if (!t.description.empty()) f["description"] = t.description;
  f["parameters"] = parameters_of(t);
  return json{{"type", "function"}, {"function", f}};
}

std::string arguments_json(const std::string& arguments) {
  // Arguments arrive as JSON text; a string that is not JSON is kept as a JSON string.
  try {
    return json::parse(arguments.empty() ? "{}" : arguments).dump();
  } catch (const json::exception&) {
    return json(arguments).dump();
  }
}

std::string hermes_system(std::span<const ToolDefinition> tools) {
  std::string s =
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
  for (const auto& t : tools) {
    s += '\n';
    s += tool_entry(t).dump();
  }
  s +=
      "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
      "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
      "</tool_call>";
  return s;
}

std::string hermes_call(const ChatToolCall& c) {
  return "<tool_call>\n{\"name\": " + json(c.name).dump() + ", \"arguments\": " + arguments_json(c.arguments) +
         "}\n</tool_call>";
}

std::string llama3_tools_preamble(std::span<const ToolDefinition> tools) {
  std::string s =
      "Given the following functions, please respond with a JSON for a function call with its proper "
      "arguments that best answers the given prompt.\n\nRespond in the format {\"name\": function name, "
      "\"parameters\": dictionary of argument name and its value}. Do not use variables.\n\n";
  for (const auto& t : tools) s += tool_entry(t).dump(4) + "\n\n";
  return s;
}

std::string random_call_id() {
  static std::mutex mutex;
  static std::mt19937 rng{std::random_device{}()};
  static const char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::lock_guard lock(mutex);
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kChars[rng() % (sizeof(kChars) - 1)];
  return id;
}

// {"name": .., "arguments"|"parameters": {..}} naming one of `tools` -> a call.
std::optional<ChatToolCall> call_of(const json& j, std::span<const ToolDefinition> tools) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
  const std::string name = j["name"].get<std::string>();
  bool known = false;
  for (const auto& t : tools) known |= t.name == name;
  if (!known) return std::nullopt;
  json args = j.contains("arguments") ? j["arguments"] : j.contains("parameters") ? j["parameters"] : json::object();
  return ChatToolCall{random_call_id(), name, args.is_string() ? args.get<std::string>() : args.dump()};
}

std::optional<json> parse_json(std::string_view text) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

std::string_view trim_blank(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

ToolSyntax tool_syntax_for(ChatFormat format) {
  switch (format) {
    case ChatFormat::kLlama3: return ToolSyntax::kLlama3;
    case ChatFormat::kMistralV1:
    case ChatFormat::kMistralV3:
    case ChatFormat::kMistralV3Tekken:
    case ChatFormat::kMistralV7:
    case ChatFormat::kMistralV7Tekken: return ToolSyntax::kMistral;
    default: return ToolSyntax::kHermes;
  }
}

std::string_view tool_syntax_name(ToolSyntax syntax) {
  switch (syntax) {
    case ToolSyntax::kHermes: return "hermes";
    case ToolSyntax::kLlama3: return "llama3";
    case ToolSyntax::kMistral: return "mistral";
  }
  return "hermes";
}

std::vector<ChatMessage> render_tool_messages(ToolSyntax syntax, std::span<const ChatMessage> messages,
                                              std::span<const ToolDefinition> tools) {
  std::vector<ChatMessage> out;
  auto plain = [](std::string role, std::string content) {
    return ChatMessage{std::move(role), std::move(content), {}, {}};
  };
  bool tools_placed = tools.empty() || syntax == ToolSyntax::kMistral;  // Mistral's go in finish_tool_prompt
  if (syntax == ToolSyntax::kHermes && !tools.empty()) {
    if (!messages.empty() && messages[0].role == "system") {
      out.push_back(plain("system", messages[0].content + "\n\n" + hermes_system(tools)));
      messages = messages.subspan(1);
    } else {
      out.push_back(plain("system", hermes_system(tools)));
    }
    tools_placed = true;
  }
  for (const ChatMessage& m : messages) {
    if (m.role == "tool") {
      if (syntax == ToolSyntax::kLlama3) {
        out.push_back(plain("ipython", m.content));
      } else if (syntax == ToolSyntax::kMistral) {
        out.push_back(plain(
            "user",
            "[TOOL_RESULTS]" + json{{"content", m.content}, {"call_id", m.tool_call_id}}.dump() + "[/TOOL_RESULTS]"));
      } else {
        // Consecutive results share one user turn.
        std::string block = "<tool_response>\n" + m.content + "\n</tool_response>";
        if (!out.empty() && out.back().role == "user" && out.back().content.rfind("<tool_response>", 0) == 0)
          out.back().content.append("\n").append(block);
        else out.push_back(plain("user", block));
      }
      continue;
    }
    if (m.role == "assistant" && !m.tool_calls.empty()) {
      std::string text = m.content;
      if (syntax == ToolSyntax::kHermes) {
        for (const auto& c : m.tool_calls) {
          if (!text.empty()) text += '\n';
          text += hermes_call(c);
        }
      } else if (syntax == ToolSyntax::kLlama3) {
        const auto& c = m.tool_calls.front();  // one call per reply in this format
        text = "{\"name\": " + json(c.name).dump() + ", \"parameters\": " + arguments_json(c.arguments) + "}";
      } else {
        json calls = json::array();
        for (const auto& c : m.tool_calls)
          calls.push_back(json{{"name", c.name}, {"arguments", json::parse(arguments_json(c.arguments))}});
        text += "[TOOL_CALLS]" + calls.dump();
      }
      out.push_back(plain("assistant", text));
      continue;
    }
    if (!tools_placed && syntax == ToolSyntax::kLlama3 && m.role == "user") {
      out.push_back(plain("user", llama3_tools_preamble(tools) + m.content));
      tools_placed = true;
      continue;
    }
    out.push_back(plain(m.role, m.content));
  }
  return out;
}

std::string finish_tool_prompt(ToolSyntax syntax, std::string prompt, std::span<const ToolDefinition> tools) {
  if (syntax != ToolSyntax::kMistral || tools.empty()) return prompt;
  json list = json::array();
  for (const auto& t : tools) list.push_back(tool_entry(t));
  const std::string block = "[AVAILABLE_TOOLS]" + list.dump() + "[/AVAILABLE_TOOLS]";
  const size_t at = prompt.rfind("[INST]");
  if (at == std::string::npos) return block + prompt;
  prompt.insert(at, block);
  return prompt;
}

std::string tool_call_gbnf(ToolSyntax syntax, std::span<const ToolDefinition> tools) {
  std::set<std::string> used;
  std::string rules, alts;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string args = fmt::format("args{}", i);
    json schema;
    try {
      schema = parameters_of(tools[i]);
    } catch (const json::exception& e) {
      throw grammar::GrammarError(
          fmt::format("function '{}': its parameters are not JSON: {}", tools[i].name, e.what()));
    }
    try {
      rules += grammar::json_schema_rules(schema, /*strict=*/true, args, used);
    } catch (const grammar::GrammarError& e) {
      throw grammar::GrammarError(fmt::format("function '{}': {}", tools[i].name, e.what()));
    }
    const std::string name = grammar::gbnf_literal(json(tools[i].name).dump());
    std::string call;
    switch (syntax) {
      case ToolSyntax::kHermes:
        call = R"("<tool_call>\n{\"name\": " )" + name + R"( ", \"arguments\": " )" + args + R"( "}\n</tool_call>")";
        break;
      case ToolSyntax::kLlama3:
        call = R"("{\"name\": " )" + name + R"( ", \"parameters\": " )" + args + R"( "}")";
        break;
      case ToolSyntax::kMistral:
        call = R"("[TOOL_CALLS][{\"name\": " )" + name + R"( ", \"arguments\": " )" + args + R"( "}]")";
        break;
    }
    alts += (alts.empty() ? "" : " | ") + call;
  }
  return "root ::= " + alts + "\n" + rules + grammar::primitive_rules(used);
}

ParsedToolOutput parse_tool_output(ToolSyntax syntax, std::string_view text, std::span<const ToolDefinition> tools) {
  ParsedToolOutput out;
  if (syntax == ToolSyntax::kHermes) {
    static constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
    size_t pos = 0;
    while (pos < text.size()) {
      const size_t open = text.find(kOpen, pos);
      if (open == std::string_view::npos) break;
      size_t close = text.find(kClose, open);
      const size_t body_end = close == std::string_view::npos ? text.size() : close;
      auto j = parse_json(trim_blank(text.substr(open + kOpen.size(), body_end - open - kOpen.size())));
      auto call = j ? call_of(*j, tools) : std::nullopt;
      if (!call) break;
      out.content += text.substr(pos, open - pos);
      out.calls.push_back(std::move(*call));
      pos = close == std::string_view::npos ? text.size() : close + kClose.size();
    }
    out.content += text.substr(pos);
    if (!out.calls.empty()) out.content = std::string(trim_blank(out.content));
    return out;
  }
  std::string_view body = trim_blank(text);
  if (syntax == ToolSyntax::kLlama3) {
    if (body.rfind("<|python_tag|>", 0) == 0) body = trim_blank(body.substr(14));
    auto j = parse_json(body);
    if (auto call = j ? call_of(*j, tools) : std::nullopt) {
      out.calls.push_back(std::move(*call));
      return out;
    }
  } else if (body.rfind("[TOOL_CALLS]", 0) == 0) {
    auto j = parse_json(trim_blank(body.substr(12)));
    if (j && j->is_array()) {
      for (const json& e : *j) {
        auto call = call_of(e, tools);
        if (!call) {
          out.calls.clear();
          break;
        }
        out.calls.push_back(std::move(*call));
      }
      if (!out.calls.empty()) return out;
    }
  }
  out.content = std::string(text);
  return out;
}

}  // namespace baton
