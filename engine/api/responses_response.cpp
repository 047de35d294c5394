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
bool hit_limit(const serving::CompletionSummary& s) { return s.finish_reason == FinishReason::kLength; }

}  // namespace

ResponsesBuilder::ResponsesBuilder(json echo, std::string model_id)
    : echo_(std::move(echo)),
      model_id_(std::move(model_id)),
      id_(response_random_id("resp_")),
      message_id_(response_random_id("msg_")),
      created_at_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                      .count()) {}

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
  return json{
      {"type", "message"}, {"id", message_id_}, {"status", status}, {"role", "assistant"}, {"content", content}};
}

json ResponsesBuilder::function_call(const ChatToolCall& call, const std::string& item_id,
                                     const std::string& status) const {
  return json{{"type", "function_call"},
              {"id", item_id},
              {"call_id", call.id},
              {"name", call.name},
              {"arguments", status == "in_progress" ? "" : call.arguments},
              {"status", status}};
}

json ResponsesBuilder::body(const std::string& text, const serving::CompletionSummary& summary,
                            const std::vector<ChatToolCall>& calls) const {
  const std::string status = hit_limit(summary) ? "incomplete" : "completed";
  ResponsesBuilder copy = *this;
  copy.usage_ = usage_of(summary);
  json output = json::array();
  if (!text.empty() || calls.empty()) output.push_back(message(status, text));
  for (const auto& c : calls) output.push_back(function_call(c, response_random_id("fc_"), "completed"));
  return copy.response(status, output);
}

std::string ResponsesBuilder::event(json data) {
  data["sequence_number"] = sequence_++;
  return fmt::format("event: {}\ndata: {}\n\n", data["type"].get<std::string>(), dump(data));
}

std::string ResponsesBuilder::opening() {
  const json in_progress = response("in_progress", json::array());
  std::string out = event({{"type", "response.created"}, {"response", in_progress}});
  out += event({{"type", "response.in_progress"}, {"response", in_progress}});
  return out;
}

std::string ResponsesBuilder::open_message() {
  message_open_ = true;
  std::string out =
      event({{"type", "response.output_item.added"}, {"output_index", 0}, {"item", message("in_progress", "")}});
  out += event({{"type", "response.content_part.added"},
                {"item_id", message_id_},
                {"output_index", 0},
                {"content_index", 0},
                {"part", part("")}});
  return out;
}

std::string ResponsesBuilder::delta(const std::string& text) {
  if (text.empty()) return {};
  text_ += text;
  return event({{"type", "response.output_text.delta"},
                {"item_id", message_id_},
                {"output_index", 0},
                {"content_index", 0},
                {"delta", text},
                {"logprobs", json::array()}});
}

std::string ResponsesBuilder::closing(const serving::CompletionSummary& summary,
                                      const std::vector<ChatToolCall>& calls) {
  const std::string status = hit_limit(summary) ? "incomplete" : "completed";
  json items = json::array();
  std::string out;
  // A reply held back for calls that had none still answers with its (maybe empty) message.
  if (!message_open_ && calls.empty()) out += open_message();
  if (message_open_) {
    const json item = message(status, text_);
    out += event({{"type", "response.output_text.done"},
                  {"item_id", message_id_},
                  {"output_index", 0},
                  {"content_index", 0},
                  {"text", text_},
                  {"logprobs", json::array()}});
    out += event({{"type", "response.content_part.done"},
                  {"item_id", message_id_},
                  {"output_index", 0},
                  {"content_index", 0},
                  {"part", part(text_)}});
    out += event({{"type", "response.output_item.done"}, {"output_index", 0}, {"item", item}});
    items.push_back(item);
  }
  for (const auto& c : calls) {
    const size_t index = items.size();
    const std::string item_id = response_random_id("fc_");
    out += event({{"type", "response.output_item.added"},
                  {"output_index", index},
                  {"item", function_call(c, item_id, "in_progress")}});
    out += event({{"type", "response.function_call_arguments.delta"},
                  {"item_id", item_id},
                  {"output_index", index},
                  {"delta", c.arguments}});
    out += event({{"type", "response.function_call_arguments.done"},
                  {"item_id", item_id},
                  {"output_index", index},
                  {"name", c.name},
                  {"arguments", c.arguments}});
    const json item = function_call(c, item_id, "completed");
    out += event({{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}});
    items.push_back(item);
  }
  usage_ = usage_of(summary);
  out += event({{"type", status == "completed" ? "response.completed" : "response.incomplete"},
                {"response", response(status, items)}});
  return out;
}

std::string ResponsesBuilder::failed(const ApiError& error) {
  json r = response("failed", json::array());
  r["error"] = {{"code", error.type()}, {"message", error.what()}};
  return event({{"type", "response.failed"}, {"response", r}});
}

}  // namespace baton::api
