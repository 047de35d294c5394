// OpenAI response bodies: whole completions, server-sent-event chunks and the error shape.
// A ResponseBuilder is made per request and fed the scheduler's TokenEvents; it renders the
// legacy-completions or chat shapes (including logprobs in each one's format).
// Strings that are not valid UTF-8 (a token that is part of a character) are dumped with
// U+FFFD replacements, never an exception. Not thread-safe: one per request.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/api/api_error.h"
#include "engine/api/openai_request.h"
#include "engine/serving/scheduler.h"
#include "engine/tokenizer/tokenizer.h"

namespace baton::api {

// {"error": {"message", "type", "param", "code"}} (param null when none; code = status).
nlohmann::json error_body(const ApiError& error);
// JSON text that never throws on invalid UTF-8.
std::string dump(const nlohmann::json& j);
// "data: <json>\n\n"
std::string sse_event(const nlohmann::json& j);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

// "stop" / "length" as OpenAI spells them (a cancelled request never gets a body).
std::string openai_finish_reason(FinishReason engine_reason);

class ResponseBuilder {
 public:
  ResponseBuilder(const GenerationRequest& request, const tokenizer::Tokenizer& tokenizer, std::string model_id);

  const std::string& id() const { return id_; }

  // Streaming: the chunk carrying one token's text (and logprobs when asked).
  nlohmann::json token_chunk(const serving::TokenEvent& event) const;
  // Streaming, chat only: the first chunk, {"delta": {"role": "assistant", "content": ""}}.
  nlohmann::json role_chunk() const;
  // Streaming: the last choice chunk, empty text/delta and the finish_reason.
  nlohmann::json final_chunk(const serving::CompletionSummary& summary) const;
  // Streaming with include_usage: {"choices": [], "usage": {...}}.
  nlohmann::json usage_chunk(const serving::CompletionSummary& summary) const;

  // Whole response: add() every event, then body().
  void add(const serving::TokenEvent& event);
  nlohmann::json body(const serving::CompletionSummary& summary) const;

 private:
  nlohmann::json base(const char* object) const;
  nlohmann::json usage(const serving::CompletionSummary& summary) const;
  // Completions: {"tokens", "token_logprobs", "top_logprobs", "text_offset"} for these events.
  nlohmann::json completion_logprobs(const std::vector<serving::TokenEvent>& events, size_t text_offset) const;
  // Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs"}]}.
  nlohmann::json chat_logprobs(const std::vector<serving::TokenEvent>& events) const;
  nlohmann::json logprobs_of(const std::vector<serving::TokenEvent>& events, size_t text_offset) const;

  Endpoint endpoint_;
  bool logprobs_;
  const tokenizer::Tokenizer& tokenizer_;
  std::string model_id_;
  std::string id_;
  int64_t created_;
  std::string text_;                         // non-streaming: the whole completion
  std::vector<serving::TokenEvent> events_;  // non-streaming, when logprobs are asked
};

}  // namespace baton::api
