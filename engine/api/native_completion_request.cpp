#include <fmt/format.h>

#include "engine/api/api_error.h"
#include "engine/api/json_body.h"
#include "engine/api/native_completion.h"

namespace baton::api {
namespace {

using nlohmann::json;

// Samplers llama-server has and Baton does not: accepted only at the value that turns them off.
struct Neutral {
  const char* name;
  double value;
};
constexpr Neutral kNeutral[] = {{"mirostat", 0},        {"typical_p", 1}, {"dynatemp_range", 0},  {"dry_multiplier", 0},
                                {"xtc_probability", 0}, {"n_indent", 0},  {"t_max_predict_ms", 0}};

void refuse_unsupported_samplers(const json& j) {
  for (const auto& n : kNeutral) {
    const json* v = json_field(j, n.name);
    if (v && !(v->is_number() && v->get<double>() == n.value))
      throw bad_request(n.name, fmt::format("'{}' is not supported (only {}, which turns it off)", n.name, n.value));
  }
  if (const json* v = json_field(j, "top_n_sigma"); v && !(v->is_number() && v->get<double>() <= 0))
    throw bad_request("top_n_sigma", "'top_n_sigma' is not supported (only -1, which turns it off)");
  if (const json* v = json_field(j, "post_sampling_probs"); v && *v == true)
    throw bad_request("post_sampling_probs",
                      "'post_sampling_probs' is not supported: probabilities are the raw distribution's");
  if (const json* v = json_field(j, "n_cmpl"); v && *v != 1)
    throw bad_request("n_cmpl", "'n_cmpl' must be 1 (one completion per request)");
  for (const char* name : {"lora", "response_fields", "multimodal_data"})
    if (const json* v = json_field(j, name); v && !(v->is_array() && v->empty()))
      throw bad_request(name, fmt::format("'{}' is not supported", name));
  if (const json* p = json_field(j, "prompt"); p && p->is_array() && p->size() > 1 && !(*p)[0].is_number_integer())
    throw bad_request("prompt", fmt::format("'prompt' holds {} prompts; this server takes one per request", p->size()));
}

}  // namespace

NativeCompletionRequest parse_native_completion(std::string_view body, uint32_t seed_if_absent) {
  json j = parse_json_object(body);
  refuse_unsupported_samplers(j);
  NativeCompletionRequest r;
  // llama-server's conventions, mapped onto the /v1/completions parser's fields.
  if (!json_field(j, "n_predict") && !json_field(j, "max_tokens")) j["n_predict"] = -1;
  if (const json* seed = json_field(j, "seed");
      seed && seed->is_number_integer() && (seed->get<int64_t>() == -1 || seed->get<int64_t>() == 0xFFFFFFFFll))
    j.erase("seed");  // llama.cpp's "random seed"
  if (const json* k = json_field(j, "top_k"); k && k->is_number_integer() && k->get<int64_t>() < 0) j["top_k"] = 0;
  if (const json* t = json_field(j, "temperature"); t && t->is_number() && t->get<double>() < 0) j["temperature"] = 0;
  int64_t repeat_last_n = 64;
  if (const json* v = json_field(j, "repeat_last_n")) {
    if (!v->is_number_integer() || v->get<int64_t>() < -1 || v->get<int64_t>() > (1 << 30))
      throw bad_request("repeat_last_n", "'repeat_last_n' must be an integer >= -1 (-1: the whole history, 0: off)");
    repeat_last_n = v->get<int64_t>();
  }
  if (const json* v = json_field(j, "n_probs")) {
    if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > 20)
      throw bad_request("n_probs", "'n_probs' must be an integer between 0 and 20");
    r.n_probs = static_cast<size_t>(v->get<int64_t>());
  }
  if (const json* v = json_field(j, "return_tokens")) {
    if (!v->is_boolean()) throw bad_request("return_tokens", "'return_tokens' must be a boolean");
    r.return_tokens = v->get<bool>();
  }
  j.erase("logprobs");  // an OpenAI field: /completion has n_probs
  r.generation = parse_generation_request(j.dump(), Endpoint::kCompletions, seed_if_absent);
  auto& e = r.generation.engine;
  e.sampling.repeat_last_n = static_cast<int32_t>(repeat_last_n);
  e.logprobs = r.n_probs > 0;
  e.n_top_logprobs = r.n_probs;
  r.generation.logprobs = false;  // the OpenAI logprobs shapes are not used here
  r.n_predict = e.max_tokens;
  return r;
}

NativeEnd native_end(FinishReason finish_reason, const std::vector<int32_t>& tokens, const std::string& content,
                     const std::vector<std::string>& stops, const tokenizer::Tokenizer& tokenizer, bool ignore_eos,
                     int64_t n_prompt, int64_t n_ctx) {
  NativeEnd end;
  end.truncated = n_prompt + static_cast<int64_t>(tokens.size()) >= n_ctx;
  if (finish_reason != FinishReason::kStop) {
    end.stop_type = "limit";
    return end;
  }
  if (!tokens.empty() && !ignore_eos && tokenizer.is_eog(tokens.back())) {
    end.stop_type = "eos";
    return end;
  }
  end.stop_type = "word";
  // The stop string is what the generated text holds right after the released content (a few
  // bytes of slack: the streamed pieces and a whole decode may differ in a leading space).
  const std::string raw = tokenizer.decode(tokens);
  const size_t from = content.size() > 4 ? content.size() - 4 : 0;
  size_t best = std::string::npos;
  for (const auto& s : stops) {
    const size_t at = raw.find(s, from);
    if (at != std::string::npos && at < best) {
      best = at;
      end.stopping_word = s;
    }
  }
  return end;
}

}  // namespace baton::api
