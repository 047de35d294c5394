#include "engine/api/responses_request.h"

#include <fmt/format.h>

#include <limits>

#include "engine/api/api_error.h"
#include "engine/api/json_body.h"

namespace baton::api {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

// A message's content: a string, or text parts (input_text, output_text; "text" as chat sends).
std::string content_text(const json& content, const std::string& at) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) json_wrong_type(at, "a string or an array of input_text parts", content);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string pat = fmt::format("{}[{}]", at, i);
    if (!part.is_object()) json_wrong_type(pat, "an object", part);
    const json* type = json_field(part, "type");
    const std::string t = type && type->is_string() ? type->get<std::string>() : "";
    if (t != "input_text" && t != "output_text" && t != "text")
      throw bad_request(pat + ".type",
                        fmt::format("'{}.type' must be \"input_text\" (only text input is supported), got {}", pat,
                                    type ? type->dump() : "nothing"));
    const json* value = json_field(part, "text");
    if (!value || !value->is_string()) throw bad_request(pat + ".text", fmt::format("'{}.text' must be a string", pat));
    text += value->get<std::string>();
  }
  return text;
}

// A function_call item -> a call of an assistant's tool_calls (chat's shape).
json call_of_responses_item(const json& item, const std::string& at) {
  const json* call_id = json_field(item, "call_id");
  if (!call_id || !call_id->is_string())
    throw bad_request(at + ".call_id", fmt::format("'{}.call_id' must be a string", at));
  const json* name = json_field(item, "name");
  if (!name || !name->is_string()) throw bad_request(at + ".name", fmt::format("'{}.name' must be a string", at));
  const json* args = json_field(item, "arguments");
  if (args && !args->is_string())
    throw bad_request(at + ".arguments", fmt::format("'{}.arguments' must be a string (JSON text)", at));
  return json{{"id", *call_id},
              {"type", "function"},
              {"function", {{"name", *name}, {"arguments", args ? *args : json("{}")}}}};
}

// `input` -> chat messages [{role, content}, {role: assistant, tool_calls}, {role: tool, ...}].
json input_messages(const json& input) {
  json messages = json::array();
  if (input.is_string()) {
    messages.push_back({{"role", "user"}, {"content", input}});
    return messages;
  }
  if (!input.is_array()) json_wrong_type("input", "a string or an array of messages", input);
  if (input.empty()) throw bad_request("input", "'input' is empty");
  for (size_t i = 0; i < input.size(); ++i) {
    const json& item = input[i];
    const std::string at = fmt::format("input[{}]", i);
    if (!item.is_object()) json_wrong_type(at, "an object (a message)", item);
    const json* type = json_field(item, "type");
    const std::string t = type && type->is_string() ? type->get<std::string>() : "message";
    if (t == "function_call") {
      // Consecutive calls (and a text reply just before them) are one assistant turn.
      json call = call_of_responses_item(item, at);
      if (!messages.empty() && messages.back()["role"] == "assistant") {
        json& last = messages.back();
        if (!last.contains("tool_calls")) last["tool_calls"] = json::array();
        last["tool_calls"].push_back(std::move(call));
      } else {
        messages.push_back(
            {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({std::move(call)})}});
      }
      continue;
    }
    if (t == "function_call_output") {
      const json* call_id = json_field(item, "call_id");
      if (!call_id || !call_id->is_string())
        throw bad_request(at + ".call_id", fmt::format("'{}.call_id' must be a string", at));
      const json* output = json_field(item, "output");
      if (!output) throw bad_request(at + ".output", fmt::format("'{}.output' is required", at));
      const std::string text = output->is_string() ? output->get<std::string>() : content_text(*output, at + ".output");
      messages.push_back({{"role", "tool"}, {"tool_call_id", *call_id}, {"content", text}});
      continue;
    }
    if (t != "message")
      throw bad_request(at + ".type", fmt::format("'{}.type' {} is not supported: only message, function_call and "
                                                  "function_call_output items",
                                                  at, type->dump()));
    const json* role = json_field(item, "role");
    if (!role || !role->is_string()) throw bad_request(at + ".role", fmt::format("'{}.role' must be a string", at));
    const std::string r = role->get<std::string>();
    if (r != "user" && r != "assistant" && r != "system" && r != "developer")
      throw bad_request(at + ".role",
                        fmt::format("'{}.role' must be user, assistant, system or developer, got \"{}\"", at, r));
    const json* content = json_field(item, "content");
    if (!content) throw bad_request(at + ".content", fmt::format("'{}.content' is required", at));
    messages.push_back({{"role", r}, {"content", content_text(*content, at + ".content")}});
  }
  return messages;
}

// Responses' function tools ({type, name, description, parameters, strict}) -> chat's
// ({type, function: {...}}), each schema's key order kept (the grammar writes properties in it).
ojson responses_chat_tools(const ojson& tools) {
  if (!tools.is_array()) throw bad_request("tools", "'tools' must be an array of function tools");
  ojson out = ojson::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const ojson& t = tools[i];
    const std::string at = fmt::format("tools[{}]", i);
    if (!t.is_object()) throw bad_request(at, fmt::format("'{}' must be an object", at));
    const auto type = t.find("type");
    if (type == t.end() || *type != "function")
      throw bad_request(at + ".type", fmt::format("'{}.type' {} is not supported: only \"function\" tools", at,
                                                  type == t.end() ? "nothing" : type->dump()));
    if (t.contains("function")) {  // already chat's shape
      out.push_back(t);
      continue;
    }
    ojson function = ojson::object();
    for (const char* name : {"name", "description", "parameters", "strict"})
      if (auto v = t.find(name); v != t.end() && !v->is_null()) function[name] = *v;
    out.push_back(ojson{{"type", "function"}, {"function", std::move(function)}});
  }
  return out;
}

// {type: "function", name} -> chat's {type: "function", function: {name}}; the strings as they are.
ojson responses_chat_tool_choice(const ojson& choice) {
  if (choice.is_string()) return choice;
  if (!choice.is_object()) throw bad_request("tool_choice", "'tool_choice' must be a string or an object");
  const auto type = choice.find("type");
  if (type == choice.end() || *type != "function")
    throw bad_request("tool_choice", fmt::format("'tool_choice' type {} is not supported: only \"function\" (or "
                                                 "\"auto\", \"none\", \"required\")",
                                                 type == choice.end() ? "nothing" : type->dump()));
  if (choice.contains("function")) return choice;
  const auto name = choice.find("name");
  if (name == choice.end() || !name->is_string())
    throw bad_request("tool_choice", "'tool_choice' must be {\"type\": \"function\", \"name\": ...}");
  return ojson{{"type", "function"}, {"function", {{"name", *name}}}};
}

// text.format -> chat's response_format (null for plain text).
ojson responses_chat_format(const ojson& text) {
  if (!text.is_object()) throw bad_request("text", "'text' must be an object");
  const auto format = text.find("format");
  if (format == text.end() || format->is_null()) return nullptr;
  if (!format->is_object()) throw bad_request("text.format", "'text.format' must be an object");
  const auto type = format->find("type");
  const std::string t = type != format->end() && type->is_string() ? type->get<std::string>() : "";
  if (t == "text") return nullptr;
  if (t == "json_object") return ojson{{"type", "json_object"}};
  if (t != "json_schema")
    throw bad_request("text.format.type", fmt::format("'text.format.type' must be \"text\", \"json_object\" or "
                                                      "\"json_schema\", got {}",
                                                      type != format->end() ? type->dump() : "nothing"));
  const auto schema = format->find("schema");
  if (schema == format->end() || schema->is_null())
    throw bad_request("text.format.schema", "'text.format.schema' is required");
  ojson js = {{"name", format->value("name", std::string("response"))}, {"schema", *schema}};
  if (auto strict = format->find("strict"); strict != format->end() && !strict->is_null()) js["strict"] = *strict;
  return ojson{{"type", "json_schema"}, {"json_schema", std::move(js)}};
}

// Chat's name of the json_schema field -> Responses' (text.format), elsewhere in `text` too.
std::string responses_param(std::string text) {
  static const std::string kChat = "response_format.json_schema";
  for (size_t at = text.find(kChat); at != std::string::npos; at = text.find(kChat, at))
    text.replace(at, kChat.size(), "text.format");
  return text;
}

// Features that keep state on the server: a clear 400 instead of a silent change.
void refuse_unsupported_response_fields(const json& j) {
  if (json_field(j, "previous_response_id"))
    throw bad_request("previous_response_id",
                      "'previous_response_id' is not supported: this server stores no responses; send the whole "
                      "conversation in 'input'");
  if (json_field(j, "conversation"))
    throw bad_request("conversation",
                      "'conversation' is not supported: this server stores no conversations; send "
                      "the whole conversation in 'input'");
  if (const json* store = json_field(j, "store"); store && *store == true)
    throw bad_request("store",
                      "'store': true is not supported: this server stores no responses (omit it or send false)");
  if (const json* bg = json_field(j, "background"); bg && *bg == true)
    throw bad_request("background", "'background': true is not supported (responses are answered while you wait)");
  if (const json* n = json_field(j, "top_logprobs"); n && !(n->is_number_integer() && n->get<int64_t>() == 0))
    throw bad_request("top_logprobs", "'top_logprobs' is not supported on /v1/responses");
}

}  // namespace

ResponsesRequest parse_responses_request(std::string_view body, uint32_t seed_if_absent) {
  const json j = parse_json_object(body);
  refuse_unsupported_response_fields(j);
  const json* input = json_field(j, "input");
  if (!input) throw bad_request("input", "'input' is required");
  json messages = input_messages(*input);
  const json* instructions = json_field(j, "instructions");
  if (instructions) {
    if (!instructions->is_string()) json_wrong_type("instructions", "a string", *instructions);
    messages.insert(messages.begin(), json{{"role", "system"}, {"content", *instructions}});
  }
  const json* max_output = json_field(j, "max_output_tokens");
  if (max_output && !(max_output->is_number_integer() && max_output->get<int64_t>() >= 1 &&
                      max_output->get<int64_t>() <= std::numeric_limits<int32_t>::max()))
    throw bad_request("max_output_tokens",
                      fmt::format("'max_output_tokens' must be an integer >= 1, got {}", max_output->dump()));

  // The chat completion: the sampling fields Responses shares with chat (and llama.cpp's
  // extras) are passed as they are, so the chat parser checks them; tools, tool_choice and
  // text.format in chat's shapes, with the schemas' key order kept.
  const ojson o = ojson::parse(body.begin(), body.end());
  ojson chat = {{"messages", ojson::parse(messages.dump())}};
  for (const char* name :
       {"model", "stream", "temperature", "top_p", "top_k", "min_p", "seed", "stop", "presence_penalty",
        "frequency_penalty", "repeat_penalty", "logit_bias", "ignore_eos", "parallel_tool_calls"})
    if (const json* v = json_field(j, name)) chat[name] = ojson::parse(v->dump());
  if (max_output) chat["max_completion_tokens"] = max_output->get<int64_t>();
  if (json_field(j, "tools")) chat["tools"] = responses_chat_tools(o["tools"]);
  if (json_field(j, "tool_choice")) chat["tool_choice"] = responses_chat_tool_choice(o["tool_choice"]);
  if (json_field(j, "text"))
    if (ojson rf = responses_chat_format(o["text"]); !rf.is_null()) chat["response_format"] = std::move(rf);

  ResponsesRequest r;
  try {
    r.generation = parse_generation_request(chat.dump(), Endpoint::kChat, seed_if_absent);
  } catch (const ApiError& e) {
    // The schema's errors name Responses' field, not chat's.
    throw ApiError(e.status(), e.type(), responses_param(e.what()), responses_param(e.param()));
  }
  const auto& s = r.generation.engine.sampling;
  json& e = r.echo;
  e["instructions"] = instructions ? *instructions : json(nullptr);
  e["max_output_tokens"] = max_output ? *max_output : json(nullptr);
  e["metadata"] = json_field(j, "metadata") ? j["metadata"] : json::object();
  // As sent, else the value used (llama.cpp's defaults, not OpenAI's 1.0).
  e["temperature"] = json_field(j, "temperature") ? j["temperature"] : json(s.temperature);
  e["top_p"] = json_field(j, "top_p") ? j["top_p"] : json(s.top_p);
  e["text"] =
      json_field(j, "text") && json_field(j["text"], "format") ? j["text"] : json{{"format", {{"type", "text"}}}};
  e["tool_choice"] = json_field(j, "tool_choice") ? j["tool_choice"] : json("auto");
  e["tools"] = json_field(j, "tools") ? j["tools"] : json::array();
  e["parallel_tool_calls"] = json_field(j, "parallel_tool_calls") ? j["parallel_tool_calls"] : json(true);
  e["truncation"] = json_field(j, "truncation") ? j["truncation"] : json("disabled");
  e["user"] = json_field(j, "user") ? j["user"] : json(nullptr);
  return r;
}

}  // namespace baton::api
