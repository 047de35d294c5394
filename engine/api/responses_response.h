// OpenAI Responses API output: the response object ("object": "response") whose output holds an
// assistant message (one output_text part) and/or function_call items, and the streamed event
// sequence
//   response.created, response.in_progress,
//   for the message: response.output_item.added, response.content_part.added,
//     response.output_text.delta ..., response.output_text.done, response.content_part.done,
//     response.output_item.done;
//   per function call: response.output_item.added, response.function_call_arguments.delta,
//     response.function_call_arguments.done, response.output_item.done;
//   then response.completed — or response.incomplete (incomplete_details.reason
//   "max_output_tokens") when the token limit or the context ended it, as OpenAI does;
//   response.failed when the request failed.
// Each event is `event: <type>` + `data: <json>` with a sequence_number from 0; no [DONE].
// Not thread-safe: one per request.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/api/api_error.h"
#include "engine/chat/chat_template.h"
#include "engine/serving/scheduler.h"

namespace baton::api {

class ResponsesBuilder {
 public:
  // `echo`: ResponsesRequest::echo.
  ResponsesBuilder(nlohmann::json echo, std::string model_id);

  const std::string& id() const { return id_; }

  // Non-streaming: the finished response for the reply's text (outside calls) and its calls.
  // The message is left out when there are calls and no other text.
  nlohmann::json body(const std::string& text, const serving::CompletionSummary& summary,
                      const std::vector<ChatToolCall>& calls = {}) const;

  // Streaming, in order: opening(), then (unless the text is held back to be parsed for calls)
  // open_message() and one delta per piece of text, then closing() (or failed() instead).
  std::string opening();
  std::string open_message();
  std::string delta(const std::string& text);
  std::string closing(const serving::CompletionSummary& summary, const std::vector<ChatToolCall>& calls = {});
  std::string failed(const ApiError& error);

 private:
  // The response object in a state: "in_progress", "completed", "incomplete", "failed".
  nlohmann::json response(const std::string& status, const nlohmann::json& output) const;
  nlohmann::json message(const std::string& status, const std::string& text) const;
  nlohmann::json part(const std::string& text) const;
  nlohmann::json function_call(const ChatToolCall& call, const std::string& item_id, const std::string& status) const;
  std::string event(nlohmann::json data);

  nlohmann::json echo_;
  std::string model_id_;
  std::string id_;          // resp_...
  std::string message_id_;  // msg_...
  int64_t created_at_;
  int64_t sequence_ = 0;
  bool message_open_ = false;  // streaming: the message item was announced
  std::string text_;           // streamed so far
  nlohmann::json usage_ = nullptr;
};

}  // namespace baton::api
