// OpenAI Responses API output: the response object ("object": "response") with one assistant
// message holding one output_text part, and the streamed event sequence
//   response.created, response.in_progress, response.output_item.added,
//   response.content_part.added, response.output_text.delta ..., response.output_text.done,
//   response.content_part.done, response.output_item.done, then response.completed — or
//   response.incomplete (incomplete_details.reason "max_output_tokens") when the token limit or
//   the context ended it, as OpenAI does; response.failed when the request failed.
// Each event is `event: <type>` + `data: <json>` with a sequence_number from 0; no [DONE].
// Not thread-safe: one per request.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/api/api_error.h"
#include "engine/serving/scheduler.h"

namespace baton::api {

class ResponsesBuilder {
 public:
  // `echo`: ResponsesRequest::echo.
  ResponsesBuilder(nlohmann::json echo, std::string model_id);

  const std::string& id() const { return id_; }

  // Non-streaming: the completed response for the whole text.
  nlohmann::json body(const std::string& text, const serving::CompletionSummary& summary) const;

  // Streaming, in order: the opening events, one delta per piece of text, the closing events
  // (or failed() instead of them).
  std::string opening();
  std::string delta(const std::string& text);
  std::string closing(const serving::CompletionSummary& summary);
  std::string failed(const ApiError& error);

 private:
  // The response object in a state: "in_progress", "completed", "incomplete", "failed".
  nlohmann::json response(const std::string& status, const nlohmann::json& output) const;
  nlohmann::json message(const std::string& status, const std::string& text) const;
  nlohmann::json part(const std::string& text) const;
  std::string event(nlohmann::json data);

  nlohmann::json echo_;
  std::string model_id_;
  std::string id_;          // resp_...
  std::string message_id_;  // msg_...
  int64_t created_at_;
  int64_t sequence_ = 0;
  std::string text_;        // streamed so far
  nlohmann::json usage_ = nullptr;
};

}  // namespace baton::api
