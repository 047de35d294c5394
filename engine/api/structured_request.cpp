#include "engine/api/structured_request.h"

#include <fmt/format.h>

#include "engine/api/api_error.h"
#include "engine/api/json_body.h"
#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/json_schema.h"

namespace baton::api {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

const ojson* ofield(const ojson& obj, const char* name) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

[[noreturn]] void wrong(const std::string& name, const std::string& what) {
  throw bad_request(name, fmt::format("'{}' {}", name, what));
}

std::string compile_schema(const ojson& schema, bool strict, const std::string& param) {
  if (!schema.is_object() && !schema.is_boolean()) wrong(param, "must be a JSON schema (an object)");
  try {
    return grammar::json_schema_to_gbnf(schema, strict);
  } catch (const grammar::GrammarError& e) {
    throw bad_request(param, fmt::format("'{}' cannot be enforced: {}", param, e.what()));
  }
}

bool valid_function_name(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

std::vector<ToolDefinition> parse_tools(const ojson& tools) {
  if (!tools.is_array()) wrong("tools", "must be an array of {type: \"function\", function: {...}}");
  if (tools.size() > 128) wrong("tools", fmt::format("holds {} tools; at most 128", tools.size()));
  std::vector<ToolDefinition> out;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = fmt::format("tools[{}]", i);
    const ojson& t = tools[i];
    if (!t.is_object()) wrong(at, "must be an object");
    const ojson* type = ofield(t, "type");
    if (!type || *type != "function") wrong(at + ".type", "must be \"function\" (the only tool type supported)");
    const ojson* f = ofield(t, "function");
    if (!f || !f->is_object()) wrong(at + ".function", "must be an object");
    ToolDefinition d;
    const ojson* name = ofield(*f, "name");
    if (!name || !name->is_string() || !valid_function_name(name->get<std::string>()))
      wrong(at + ".function.name", "must be 1 to 64 letters, digits, '_' or '-'");
    d.name = name->get<std::string>();
    for (const auto& other : out)
      if (other.name == d.name) wrong(at + ".function.name", fmt::format("\"{}\" is given twice", d.name));
    if (const ojson* desc = ofield(*f, "description")) {
      if (!desc->is_string()) wrong(at + ".function.description", "must be a string");
      d.description = desc->get<std::string>();
    }
    if (const ojson* params = ofield(*f, "parameters")) {
      if (!params->is_object()) wrong(at + ".function.parameters", "must be a JSON schema object");
      d.parameters = params->dump();
    }
    out.push_back(std::move(d));
  }
  return out;
}

ToolChoice parse_tool_choice(const ojson& c, const std::vector<ToolDefinition>& tools) {
  ToolChoice choice;
  if (c.is_string()) {
    const std::string s = c.get<std::string>();
    if (s == "auto") choice.mode = ToolChoice::Mode::kAuto;
    else if (s == "none") choice.mode = ToolChoice::Mode::kNone;
    else if (s == "required") choice.mode = ToolChoice::Mode::kRequired;
    else wrong("tool_choice", fmt::format("must be \"auto\", \"none\", \"required\" or a function, got \"{}\"", s));
  } else if (c.is_object()) {
    const ojson* f = ofield(c, "function");
    const ojson* name = f ? ofield(*f, "name") : nullptr;
    if (!name || !name->is_string())
      wrong("tool_choice", "must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
    choice.mode = ToolChoice::Mode::kNamed;
    choice.name = name->get<std::string>();
    bool known = false;
    for (const auto& t : tools) known |= t.name == choice.name;
    if (!known) wrong("tool_choice", fmt::format("names function \"{}\", which is not in 'tools'", choice.name));
  } else {
    wrong("tool_choice", "must be a string or an object");
  }
  if (tools.empty() && (choice.mode == ToolChoice::Mode::kRequired || choice.mode == ToolChoice::Mode::kNamed))
    wrong("tool_choice", "requires a tool call but 'tools' is empty");
  return choice;
}

}  // namespace

void parse_structured_fields(const json& j, std::string_view body, Endpoint endpoint, GenerationRequest& r) {
  const bool wanted = json_field(j, "response_format") || json_field(j, "grammar") || json_field(j, "json_schema") ||
                      json_field(j, "tools") || json_field(j, "tool_choice");
  if (!wanted) return;
  // Schemas keep their property order (the order the grammar writes properties in).
  const ojson o = ojson::parse(body.begin(), body.end());
  int constraints = 0;
  const char* source = "";
  if (const ojson* rf = ofield(o, "response_format")) {
    if (!rf->is_object()) wrong("response_format", "must be an object");
    const ojson* type = ofield(*rf, "type");
    const std::string t = type && type->is_string() ? type->get<std::string>() : "";
    if (t == "json_object") {
      r.grammar = grammar::json_object_gbnf();
    } else if (t == "json_schema") {
      const ojson* js = ofield(*rf, "json_schema");
      if (!js || !js->is_object()) wrong("response_format.json_schema", "must be an object with 'schema'");
      const ojson* schema = ofield(*js, "schema");
      if (!schema) wrong("response_format.json_schema.schema", "is required");
      const ojson* strict = ofield(*js, "strict");
      if (strict && !strict->is_boolean()) wrong("response_format.json_schema.strict", "must be a boolean");
      r.grammar = compile_schema(*schema, strict && strict->get<bool>(), "response_format.json_schema.schema");
    } else if (t != "text") {
      wrong("response_format.type", fmt::format("must be \"text\", \"json_object\" or \"json_schema\", got {}",
                                                type ? type->dump() : "nothing"));
    }
    if (!r.grammar.empty()) {
      ++constraints;
      source = "response_format";
    }
  }
  if (const ojson* g = ofield(o, "grammar")) {
    if (!g->is_string()) wrong("grammar", "must be a string (GBNF)");
    if (!g->get<std::string>().empty()) {
      try {
        grammar::parse_gbnf(g->get<std::string>());
      } catch (const grammar::GrammarError& e) {
        throw bad_request("grammar", fmt::format("'grammar' is not valid GBNF: {}", e.what()));
      }
      r.grammar = g->get<std::string>();
      ++constraints;
      source = "grammar";
    }
  }
  if (const ojson* s = ofield(o, "json_schema")) {
    r.grammar = compile_schema(*s, false, "json_schema");
    ++constraints;
    source = "json_schema";
  }
  if (constraints > 1)
    throw bad_request(source, "give only one of 'response_format' (json), 'grammar' and 'json_schema'");

  if (const ojson* tools = ofield(o, "tools")) {
    if (endpoint != Endpoint::kChat && !(tools->is_array() && tools->empty()))
      wrong("tools", "is only accepted by /v1/chat/completions");
    r.tools = parse_tools(*tools);
  }
  if (const ojson* c = ofield(o, "tool_choice")) {
    if (endpoint != Endpoint::kChat) wrong("tool_choice", "is only accepted by /v1/chat/completions");
    r.tool_choice = parse_tool_choice(*c, r.tools);
  }
  if (const ojson* p = ofield(o, "parallel_tool_calls"); p && !p->is_boolean())
    wrong("parallel_tool_calls", "must be a boolean");
  if (!forced_tools(r).empty() && !r.grammar.empty())
    throw bad_request("tool_choice",
                      "a forced tool call cannot be combined with 'response_format', 'grammar' or 'json_schema'");
}

std::vector<ChatToolCall> parse_message_tool_calls(const json& calls, const std::string& at) {
  if (!calls.is_array()) wrong(at, "must be an array");
  std::vector<ChatToolCall> out;
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string c_at = fmt::format("{}[{}]", at, i);
    const json& c = calls[i];
    if (!c.is_object()) wrong(c_at, "must be an object");
    const json* f = json_field(c, "function");
    if (!f || !f->is_object()) wrong(c_at + ".function", "must be an object with name and arguments");
    const json* name = json_field(*f, "name");
    if (!name || !name->is_string()) wrong(c_at + ".function.name", "must be a string");
    ChatToolCall call;
    call.name = name->get<std::string>();
    if (const json* id = json_field(c, "id"); id && id->is_string()) call.id = id->get<std::string>();
    if (const json* args = json_field(*f, "arguments"))
      call.arguments = args->is_string() ? args->get<std::string>() : args->dump();
    out.push_back(std::move(call));
  }
  return out;
}

std::vector<ToolDefinition> forced_tools(const GenerationRequest& r) {
  if (r.tool_choice.mode == ToolChoice::Mode::kRequired) return r.tools;
  if (r.tool_choice.mode == ToolChoice::Mode::kNamed)
    for (const auto& t : r.tools)
      if (t.name == r.tool_choice.name) return {t};
  return {};
}

}  // namespace baton::api
