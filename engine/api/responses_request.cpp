#include "engine/api/responses_request.h"

#include <fmt/format.h>

#include <limits>

#include "engine/api/api_error.h"
#include "engine/api/json_body.h"

namespace baton::api {
namespace {

using nlohmann::json;

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
      throw bad_request(pat + ".type", fmt::format("'{}.type' must be \"input_text\" (only text input is supported), got {}",
                                                   pat, type ? type->dump() : "nothing"));
    const json* value = json_field(part, "text");
    if (!value || !value->is_string()) throw bad_request(pat + ".text", fmt::format("'{}.text' must be a string", pat));
    text += value->get<std::string>();
  }
  return text;
}

// `input` -> chat messages [{role, content}].
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
    if (const json* type = json_field(item, "type"); type && *type != "message")
      throw bad_request(at + ".type", fmt::format("'{}.type' {} is not supported: only messages (text in, text out)", at,
                                                  type->dump()));
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

// Features that keep state on the server or call tools: a clear 400 instead of a silent change.
void refuse_unsupported_response_fields(const json& j) {
  if (json_field(j, "previous_response_id"))
    throw bad_request("previous_response_id",
                      "'previous_response_id' is not supported: this server stores no responses; send the whole "
                      "conversation in 'input'");
  if (json_field(j, "conversation"))
    throw bad_request("conversation", "'conversation' is not supported: this server stores no conversations; send "
                                      "the whole conversation in 'input'");
  if (const json* store = json_field(j, "store"); store && *store == true)
    throw bad_request("store", "'store': true is not supported: this server stores no responses (omit it or send false)");
  if (const json* bg = json_field(j, "background"); bg && *bg == true)
    throw bad_request("background", "'background': true is not supported (responses are answered while you wait)");
  if (const json* tools = json_field(j, "tools"); tools && !(tools->is_array() && tools->empty()))
    throw bad_request("tools", "'tools' is not supported on /v1/responses (text in, text out)");
  if (const json* choice = json_field(j, "tool_choice"); choice && *choice != "auto" && *choice != "none")
    throw bad_request("tool_choice", fmt::format("'tool_choice' {} needs tools, which /v1/responses does not support",
                                                 choice->dump()));
  if (const json* n = json_field(j, "top_logprobs"); n && !(n->is_number_integer() && n->get<int64_t>() == 0))
    throw bad_request("top_logprobs", "'top_logprobs' is not supported on /v1/responses");
  if (const json* text = json_field(j, "text")) {
    if (!text->is_object()) json_wrong_type("text", "an object", *text);
    if (const json* format = json_field(*text, "format")) {
      if (!format->is_object()) json_wrong_type("text.format", "an object", *format);
      const json* type = json_field(*format, "type");
      if (type && *type != "text")
        throw bad_request("text.format", fmt::format("'text.format' type {} is not supported (only \"text\")", type->dump()));
    }
  }
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
    throw bad_request("max_output_tokens", fmt::format("'max_output_tokens' must be an integer >= 1, got {}", max_output->dump()));

  // The chat completion: the sampling fields Responses shares with chat (and llama.cpp's
  // extras) are passed as they are, so the chat parser checks them.
  json chat = {{"messages", messages}};
  for (const char* name : {"model", "stream", "temperature", "top_p", "top_k", "min_p", "seed", "stop",
                           "presence_penalty", "frequency_penalty", "repeat_penalty", "logit_bias", "ignore_eos"})
    if (const json* v = json_field(j, name)) chat[name] = *v;
  if (max_output) chat["max_completion_tokens"] = *max_output;

  ResponsesRequest r;
  r.generation = parse_generation_request(chat.dump(), Endpoint::kChat, seed_if_absent);
  const auto& s = r.generation.engine.sampling;
  json& e = r.echo;
  e["instructions"] = instructions ? *instructions : json(nullptr);
  e["max_output_tokens"] = max_output ? *max_output : json(nullptr);
  e["metadata"] = json_field(j, "metadata") ? j["metadata"] : json::object();
  // As sent, else the value used (llama.cpp's defaults, not OpenAI's 1.0).
  e["temperature"] = json_field(j, "temperature") ? j["temperature"] : json(s.temperature);
  e["top_p"] = json_field(j, "top_p") ? j["top_p"] : json(s.top_p);
  e["text"] = json{{"format", {{"type", "text"}}}};
  e["tool_choice"] = json_field(j, "tool_choice") ? j["tool_choice"] : json("auto");
  e["tools"] = json::array();
  e["truncation"] = json_field(j, "truncation") ? j["truncation"] : json("disabled");
  e["user"] = json_field(j, "user") ? j["user"] : json(nullptr);
  return r;
}

}  // namespace baton::api
