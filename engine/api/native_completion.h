// llama-server's native POST /completion (tools/server/README.md): the request is read by the
// /v1/completions parser after llama-server's conventions are mapped onto it (n_predict
// default -1, seed -1 random, top_k <= 0 off, temperature < 0 greedy, n_probs, repeat_last_n,
// return_tokens); samplers Baton does not have are refused when set to anything but their
// neutral value. The answer is llama-server's shape: content, tokens, stop, stop_type,
// stopping_word, truncated, timings, generation_settings, tokens_predicted, tokens_evaluated,
// completion_probabilities; streamed as `data: {json}` per token, then the final object
// (no [DONE]). Pure functions here; the route is in native_completion.cpp.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/api/openai_request.h"
#include "engine/runtime/finish_reason.h"
#include "engine/tokenizer/tokenizer.h"

namespace baton::api {

struct NativeCompletionRequest {
  GenerationRequest generation;  // endpoint kCompletions
  bool return_tokens = false;
  size_t n_probs = 0;
  int32_t n_predict = -1;  // as resolved (-1: no limit)
};

NativeCompletionRequest parse_native_completion(std::string_view body, uint32_t seed_if_absent);

// What the final object says about how the completion ended.
struct NativeEnd {
  std::string stop_type;      // "eos", "limit" or "word"
  std::string stopping_word;  // the stop string that ended it, or ""
  bool truncated = false;     // the context filled up
};
// `tokens`: every generated token; `content`: the released text; `stops`: the request's.
NativeEnd native_end(FinishReason finish_reason, const std::vector<int32_t>& tokens, const std::string& content,
                     const std::vector<std::string>& stops, const tokenizer::Tokenizer& tokenizer, bool ignore_eos,
                     int64_t n_prompt, int64_t n_ctx);

// generation_settings / /props default_generation_settings.params: the sampling settings used.
nlohmann::json native_generation_settings(const serving::CompletionRequest& request, bool stream, size_t n_probs,
                                          int64_t n_ctx, const std::string& model);

// One completion_probabilities entry: {id, token, logprob, bytes, top_logprobs: [...]}.
nlohmann::json native_probabilities(const serving::TokenEvent& event, const tokenizer::Tokenizer& tokenizer);

}  // namespace baton::api
