// JSON -> GenerationRequest / TokenizeRequest. Each accessor checks one field's type and
// range and names the field (with its path, e.g. messages[2].content) when it is wrong.
#include "engine/api/openai_request.h"

#include <fmt/format.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "engine/api/api_error.h"
#include "engine/api/json_body.h"
#include "engine/api/structured_request.h"

namespace baton::api {
namespace {

using nlohmann::json;

std::optional<bool> get_bool(const json& obj, const char* name) {
  const json* v = json_field(obj, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) json_wrong_type(name, "a boolean", *v);
  return v->get<bool>();
}

std::optional<double> get_number(const json& obj, const char* name, double lo, double hi) {
  const json* v = json_field(obj, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) json_wrong_type(name, "a number", *v);
  double x = v->get<double>();
  if (!(x >= lo && x <= hi))
    throw bad_request(name, fmt::format("'{}' must be between {} and {}, got {}", name, lo, hi, x));
  return x;
}

std::optional<int64_t> get_int(const json& obj, const char* name, int64_t lo, int64_t hi) {
  const json* v = json_field(obj, name);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) json_wrong_type(name, "an integer", *v);
  // Unsigned values above int64's range compare as huge.
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi))
    throw bad_request(name, fmt::format("'{}' must be between {} and {}, got {}", name, lo, hi, v->dump()));
  int64_t x = v->get<int64_t>();
  if (x < lo || x > hi) throw bad_request(name, fmt::format("'{}' must be between {} and {}, got {}", name, lo, hi, x));
  return x;
}

std::optional<std::string> get_string(const json& obj, const char* name) {
  const json* v = json_field(obj, name);
  if (!v) return std::nullopt;
  if (!v->is_string()) json_wrong_type(name, "a string", *v);
  return v->get<std::string>();
}

std::vector<int32_t> token_array(const json& arr, const std::string& name) {
  std::vector<int32_t> ids;
  ids.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    const json& t = arr[i];
    std::string at = fmt::format("{}[{}]", name, i);
    if (!t.is_number_integer()) json_wrong_type(at, "a token id (integer)", t);
    if (t.is_number_unsigned() ? t.get<uint64_t>() > 0x7fffffffu
                               : (t.get<int64_t>() < 0 || t.get<int64_t>() > 0x7fffffff))
      throw bad_request(at, fmt::format("'{}' is not a token id: {}", at, t.dump()));
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return ids;
}

PromptInput parse_prompt(const json& obj) {
  const json* v = json_field(obj, "prompt");
  if (!v) throw bad_request("prompt", "'prompt' is required");
  PromptInput p;
  if (v->is_string()) {
    p.text = v->get<std::string>();
    return p;
  }
  if (!v->is_array()) json_wrong_type("prompt", "a string or an array of token ids", *v);
  if (v->empty()) throw bad_request("prompt", "'prompt' is an empty array");
  const json& first = (*v)[0];
  if (first.is_number_integer()) {
    p.is_text = false;
    p.tokens = token_array(*v, "prompt");
    return p;
  }
  // A list of prompts: only one is accepted (n = 1, no batching of prompts).
  if (v->size() != 1)
    throw bad_request("prompt", fmt::format("'prompt' holds {} prompts; this server takes one per request", v->size()));
  if (first.is_string()) {
    p.text = first.get<std::string>();
  } else if (first.is_array() && !first.empty()) {
    p.is_text = false;
    p.tokens = token_array(first, "prompt[0]");
  } else {
    json_wrong_type("prompt[0]", "a string or a non-empty array of token ids", first);
  }
  return p;
}

std::string message_content(const json& content, const std::string& at) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) json_wrong_type(at, "a string or an array of text parts", content);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    std::string pat = fmt::format("{}[{}]", at, i);
    if (!part.is_object()) json_wrong_type(pat, "an object", part);
    auto type = part.find("type");
    if (type == part.end() || !type->is_string() || type->get<std::string>() != "text")
      throw bad_request(pat + ".type", fmt::format("'{}.type' must be \"text\" (only text content is supported)", pat));
    auto t = part.find("text");
    if (t == part.end() || !t->is_string())
      throw bad_request(pat + ".text", fmt::format("'{}.text' must be a string", pat));
    text += t->get<std::string>();
  }
  return text;
}

std::vector<ChatMessage> parse_messages(const json& obj) {
  const json* v = json_field(obj, "messages");
  if (!v) throw bad_request("messages", "'messages' is required");
  if (!v->is_array()) json_wrong_type("messages", "an array", *v);
  if (v->empty()) throw bad_request("messages", "'messages' is empty");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    std::string at = fmt::format("messages[{}]", i);
    if (!m.is_object()) json_wrong_type(at, "an object", m);
    auto role = m.find("role");
    if (role == m.end() || !role->is_string())
      throw bad_request(at + ".role", fmt::format("'{}.role' must be a string", at));
    ChatMessage cm;
    cm.role = role->get<std::string>();
    if (cm.role == "developer") cm.role = "system";  // OpenAI's newer name for it
    if (cm.role != "system" && cm.role != "user" && cm.role != "assistant" && cm.role != "tool")
      throw bad_request(at + ".role",
                        fmt::format("'{}.role' must be system, user, assistant or tool, got \"{}\"", at, cm.role));
    auto content = m.find("content");
    if (content != m.end() && !content->is_null()) cm.content = message_content(*content, at + ".content");
    // Function calling: an assistant's calls and a tool's result (engine/chat/tool_calls.h).
    if (const json* calls = json_field(m, "tool_calls"); calls && cm.role == "assistant")
      cm.tool_calls = parse_message_tool_calls(*calls, at + ".tool_calls");
    if (auto id = get_string(m, "tool_call_id"); id && cm.role == "tool") cm.tool_call_id = *id;
    out.push_back(std::move(cm));
  }
  return out;
}

std::vector<std::string> parse_stop(const json& obj) {
  const json* v = json_field(obj, "stop");
  std::vector<std::string> stop;
  if (!v) return stop;
  if (v->is_string()) {
    if (!v->get<std::string>().empty()) stop.push_back(v->get<std::string>());
    return stop;
  }
  if (!v->is_array()) json_wrong_type("stop", "a string or an array of strings", *v);
  if (v->size() > 16) throw bad_request("stop", fmt::format("'stop' holds {} strings; at most 16", v->size()));
  for (size_t i = 0; i < v->size(); ++i) {
    const json& s = (*v)[i];
    if (!s.is_string()) json_wrong_type(fmt::format("stop[{}]", i), "a string", s);
    if (!s.get<std::string>().empty()) stop.push_back(s.get<std::string>());
  }
  return stop;
}

// OpenAI's {"<token id>": bias} (bias in [-100, 100]) or llama-server's [[id, bias], ...]; a bias
// of false (llama-server) bans the token.
std::vector<std::pair<int32_t, float>> parse_logit_bias(const json& obj) {
  std::vector<std::pair<int32_t, float>> out;
  const json* v = json_field(obj, "logit_bias");
  if (!v) return out;
  auto bias_of = [](const json& b, const std::string& at) -> float {
    if (b.is_boolean() && !b.get<bool>()) return -std::numeric_limits<float>::infinity();
    if (!b.is_number()) json_wrong_type(at, "a number in [-100, 100] or false (ban)", b);
    const double x = b.get<double>();
    if (!(x >= -100 && x <= 100))
      throw bad_request(at, fmt::format("'{}' must be between -100 and 100, got {}", at, x));
    return static_cast<float>(x);
  };
  auto id_of = [](const json& id, const std::string& at) -> int32_t {
    int64_t x = -1;
    if (id.is_number_integer()) x = id.get<int64_t>();
    else if (id.is_string()) {
      const std::string& s = id.get_ref<const std::string&>();
      if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos)
        throw bad_request(at, fmt::format("'{}': \"{}\" is not a token id", at, s));
      x = std::stoll(s);
    }
    if (x < 0 || x > std::numeric_limits<int32_t>::max())
      throw bad_request(at, fmt::format("'{}' must be a token id (a non-negative integer)", at));
    return static_cast<int32_t>(x);
  };
  if ((v->is_object() || v->is_array()) && v->size() > 1024)
    throw bad_request("logit_bias", fmt::format("'logit_bias' holds {} tokens; at most 1024", v->size()));
  if (v->is_object()) {
    for (const auto& [key, b] : v->items()) {
      const std::string at = "logit_bias." + key;
      out.emplace_back(id_of(json(key), at), bias_of(b, at));
    }
  } else if (v->is_array()) {
    for (size_t i = 0; i < v->size(); ++i) {
      const std::string at = fmt::format("logit_bias[{}]", i);
      const json& e = (*v)[i];
      if (!e.is_array() || e.size() != 2) json_wrong_type(at, "a [token id, bias] pair", e);
      out.emplace_back(id_of(e[0], at), bias_of(e[1], at));
    }
  } else {
    json_wrong_type("logit_bias", "an object of token id -> bias", *v);
  }
  return out;
}

}  // namespace

GenerationRequest parse_generation_request(std::string_view body, Endpoint endpoint, uint32_t seed_if_absent) {
  json j = parse_json_object(body);
  GenerationRequest r;
  r.endpoint = endpoint;
  r.model = get_string(j, "model").value_or("");
  if (endpoint == Endpoint::kCompletions) {
    r.prompt = parse_prompt(j);
    if (auto echo = get_bool(j, "echo"); echo && *echo) throw bad_request("echo", "'echo' is not supported");
    if (auto suffix = get_string(j, "suffix"); suffix && !suffix->empty())
      throw bad_request("suffix", "'suffix' is not supported");
  } else {
    r.messages = parse_messages(j);
  }
  if (auto n = get_int(j, "n", 1, 1 << 30); n && *n != 1)
    throw bad_request("n", fmt::format("'n' must be 1 (one choice per request), got {}", *n));
  // Accepted by OpenAI, not implemented here: refused rather than silently ignored.
  if (auto best_of = get_int(j, "best_of", 1, 1 << 30); best_of && *best_of != 1)
    throw bad_request("best_of", fmt::format("'best_of' must be 1 (one candidate per request), got {}", *best_of));
  // response_format, grammar, json_schema, tools, tool_choice (structured_request.cpp).
  parse_structured_fields(j, body, endpoint, r);
  r.stream = get_bool(j, "stream").value_or(false);
  if (const json* so = json_field(j, "stream_options")) {
    if (!so->is_object()) json_wrong_type("stream_options", "an object", *so);
    const json* iu = json_field(*so, "include_usage");
    if (iu && !iu->is_boolean()) json_wrong_type("stream_options.include_usage", "a boolean", *iu);
    r.include_usage = iu && iu->get<bool>();
  }

  auto& e = r.engine;
  const int64_t kMaxInt = std::numeric_limits<int32_t>::max();
  std::optional<int64_t> max_tokens;
  if (endpoint == Endpoint::kChat) max_tokens = get_int(j, "max_completion_tokens", -1, kMaxInt);
  if (!max_tokens) max_tokens = get_int(j, "max_tokens", -1, kMaxInt);
  if (max_tokens && *max_tokens == 0)
    throw bad_request("max_tokens", "'max_tokens' must be at least 1 (or -1: no limit)");
  // llama-server's n_predict wins over max_tokens; 0 generates nothing.
  if (auto n_predict = get_int(j, "n_predict", -1, kMaxInt)) max_tokens = n_predict;
  // OpenAI's defaults: 16 for legacy completions, up to the context for chat.
  e.max_tokens = static_cast<int32_t>(max_tokens.value_or(endpoint == Endpoint::kCompletions ? 16 : -1));

  auto& s = e.sampling;
  if (auto v = get_number(j, "temperature", 0, 2)) s.temperature = static_cast<float>(*v);
  if (auto v = get_number(j, "top_p", 0, 1)) s.top_p = static_cast<float>(*v);
  if (auto v = get_int(j, "top_k", 0, kMaxInt)) s.top_k = static_cast<int32_t>(*v);
  if (auto v = get_number(j, "min_p", 0, 1)) s.min_p = static_cast<float>(*v);
  if (auto v = get_number(j, "presence_penalty", -2, 2)) s.presence_penalty = static_cast<float>(*v);
  if (auto v = get_number(j, "frequency_penalty", -2, 2)) s.frequency_penalty = static_cast<float>(*v);
  if (auto v = get_number(j, "repeat_penalty", 0, 10)) {
    if (*v <= 0) throw bad_request("repeat_penalty", "'repeat_penalty' must be > 0");
    s.repeat_penalty = static_cast<float>(*v);
  }
  // OpenAI's seed is any integer; the sampler takes 32 bits of it.
  if (auto v = get_int(j, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()))
    s.seed = static_cast<uint32_t>(static_cast<uint64_t>(*v));
  else s.seed = seed_if_absent;
  e.stop = parse_stop(j);
  s.logit_bias = parse_logit_bias(j);
  e.ignore_eos = get_bool(j, "ignore_eos").value_or(false);
  // llama-server's name: reuse the KV of a cached prompt prefix (bitwise the same result).
  e.cache_prompt = get_bool(j, "cache_prompt").value_or(true);
  // llama-server's speculative.n_max / n_min (as dotted keys, or one "speculative" object):
  // draft tokens per pass for this request; the output is the same, only the speed changes.
  for (const char* field : {"n_max", "n_min"}) {
    const std::string dotted = std::string("speculative.") + field;
    std::optional<int64_t> v = get_int(j, dotted.c_str(), 0, 64);
    if (!v && j.contains("speculative")) {
      if (!j["speculative"].is_object()) throw bad_request("speculative", "'speculative' must be an object");
      v = get_int(j["speculative"], field, 0, 64);
    }
    if (v) (std::string_view(field) == "n_max" ? e.draft_max : e.draft_min) = static_cast<int>(*v);
  }

  if (endpoint == Endpoint::kCompletions) {
    // Legacy completions: logprobs = N asks for the chosen token's and the top N.
    if (auto n = get_int(j, "logprobs", 0, 20)) {
      r.logprobs = true;
      r.top_logprobs = static_cast<size_t>(*n);
    }
  } else {
    r.logprobs = get_bool(j, "logprobs").value_or(false);
    auto n = get_int(j, "top_logprobs", 0, 20);
    if (n && *n > 0 && !r.logprobs) throw bad_request("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    r.top_logprobs = static_cast<size_t>(n.value_or(0));
  }
  e.logprobs = r.logprobs;
  e.n_top_logprobs = r.top_logprobs;
  return r;
}

TokenizeRequest parse_tokenize_request(std::string_view body) {
  json j = parse_json_object(body);
  TokenizeRequest r;
  auto content = get_string(j, "content");
  if (!content) throw bad_request("content", "'content' is required");
  r.content = std::move(*content);
  r.add_special = get_bool(j, "add_special").value_or(false);
  r.with_pieces = get_bool(j, "with_pieces").value_or(false);
  return r;
}

std::vector<int32_t> parse_detokenize_request(std::string_view body) {
  json j = parse_json_object(body);
  const json* v = json_field(j, "tokens");
  if (!v) throw bad_request("tokens", "'tokens' is required");
  if (!v->is_array()) json_wrong_type("tokens", "an array of token ids", *v);
  return token_array(*v, "tokens");
}

}  // namespace baton::api
