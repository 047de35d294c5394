#include "engine/api/responses_response.h"

#include <fmt/format.h>

#include <chrono>
#include <random>

#include "engine/api/openai_response.h"

namespace baton::api {

using nlohmann::json;

namespace {

std::string response_random_id(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}{:016x}{:016x}", prefix, rng(), rng());
}

json usage_of(const serving::CompletionSummary& s) {
  return json{{"input_tokens", s.prompt_tokens},
              {"input_tokens_details", {{"cached_tokens", 0}}},
              {"output_tokens", s.completion_tokens},
              {"output_tokens_details", {{"reasoning_tokens", 0}}},
              {"total_tokens", s.prompt_tokens + s.completion_tokens}};
}

// Ended by the token limit (max_output_tokens or the context) rather than by the model.
bool hit_limit(const serving::CompletionSummary& s) { return s.finish_reason == "length"; }

}  // namespace

ResponsesBuilder::ResponsesBuilder(json echo, std::string model_id)
    : echo_(std::move(echo)),
      model_id_(std::move(model_id)),
      id_(response_random_id("resp_")),
      message_id_(response_random_id("msg_")),
      created_at_(std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch()).count()) {}

json ResponsesBuilder::response(const std::string& status, const json& output) const {
  json r = {{"id", id_},
            {"object", "response"},
            {"created_at", created_at_},
            {"status", status},
            {"background", false},
            {"error", nullptr},
            {"incomplete_details", nullptr},
            {"model", model_id_},
            {"output", output},
            {"parallel_tool_calls", true},
            {"previous_response_id", nullptr},
            {"reasoning", nullptr},
            {"store", false},
            {"usage", usage_}};
  r.update(echo_);
  if (status == "incomplete") r["incomplete_details"] = {{"reason", "max_output_tokens"}};
  return r;
}

json ResponsesBuilder::part(const std::string& text) const {
  return json{{"type", "output_text"}, {"text", text}, {"annotations", json::array()}, {"logprobs", json::array()}};
}

json ResponsesBuilder::message(const std::string& status, const std::string& text) const {
  json content = json::array();
  if (status != "in_progress") content.push_back(part(text));
  return json{{"type", "message"}, {"id", message_id_}, {"status", status}, {"role", "assistant"}, {"content", content}};
}

json ResponsesBuilder::body(const std::string& text, const serving::CompletionSummary& summary) const {
  const std::string status = hit_limit(summary) ? "incomplete" : "completed";
  ResponsesBuilder copy = *this;
  copy.usage_ = usage_of(summary);
  return copy.response(status, json::array({message(status, text)}));
}

std::string ResponsesBuilder::event(json data) {
  data["sequence_number"] = sequence_++;
  return fmt::format("event: {}\ndata: {}\n\n", data["type"].get<std::string>(), dump(data));
}

std::string ResponsesBuilder::opening() {
  const json in_progress = response("in_progress", json::array());
  std::string out = event({{"type", "response.created"}, {"response", in_progress}});
  out += event({{"type", "response.in_progress"}, {"response", in_progress}});
  out += event({{"type", "response.output_item.added"}, {"output_index", 0}, {"item", message("in_progress", "")}});
  out += event({{"type", "response.content_part.added"}, {"item_id", message_id_}, {"output_index", 0},
                {"content_index", 0}, {"part", part("")}});
  return out;
}

std::string ResponsesBuilder::delta(const std::string& text) {
  if (text.empty()) return {};
  text_ += text;
  return event({{"type", "response.output_text.delta"}, {"item_id", message_id_}, {"output_index", 0},
                {"content_index", 0}, {"delta", text}, {"logprobs", json::array()}});
}

std::string ResponsesBuilder::closing(const serving::CompletionSummary& summary) {
  const std::string status = hit_limit(summary) ? "incomplete" : "completed";
  const json item = message(status, text_);
  std::string out = event({{"type", "response.output_text.done"}, {"item_id", message_id_}, {"output_index", 0},
                           {"content_index", 0}, {"text", text_}, {"logprobs", json::array()}});
  out += event({{"type", "response.content_part.done"}, {"item_id", message_id_}, {"output_index", 0},
                {"content_index", 0}, {"part", part(text_)}});
  out += event({{"type", "response.output_item.done"}, {"output_index", 0}, {"item", item}});
  usage_ = usage_of(summary);
  out += event({{"type", status == "completed" ? "response.completed" : "response.incomplete"},
                {"response", response(status, json::array({item}))}});
  return out;
}

std::string ResponsesBuilder::failed(const ApiError& error) {
  json r = response("failed", json::array());
  r["error"] = {{"code", error.type()}, {"message", error.what()}};
  return event({{"type", "response.failed"}, {"response", r}});
}

}  // namespace baton::api
