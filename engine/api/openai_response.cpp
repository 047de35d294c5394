// OpenAI's response shapes for /v1/completions ("text_completion") and /v1/chat/completions
// ("chat.completion", "chat.completion.chunk").
#include "engine/api/openai_response.h"

#include <fmt/format.h>

#include <chrono>
#include <random>

namespace baton::api {

using nlohmann::json;

json error_body(const ApiError& error) {
  json e = {{"message", error.what()}, {"type", error.type()}, {"code", error.status()}};
  e["param"] = error.param().empty() ? json(nullptr) : json(error.param());
  return json{{"error", e}};
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& j) { return "data: " + dump(j) + "\n\n"; }

std::string openai_finish_reason(FinishReason engine_reason) {
  return engine_reason == FinishReason::kLength ? "length" : "stop";
}

namespace {

std::string random_id(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}{:016x}{:08x}", prefix, rng(), static_cast<uint32_t>(rng()));
}

json byte_array(const std::string& s) {
  json a = json::array();
  for (unsigned char c : s) a.push_back(static_cast<int>(c));
  return a;
}

}  // namespace

ResponseBuilder::ResponseBuilder(const GenerationRequest& request, const tokenizer::Tokenizer& tokenizer,
                                 std::string model_id)
    : endpoint_(request.endpoint),
      logprobs_(request.logprobs),
      tokenizer_(tokenizer),
      model_id_(std::move(model_id)),
      id_(random_id(request.endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-")),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                   .count()) {}

json ResponseBuilder::base(const char* object) const {
  return json{{"id", id_}, {"object", object}, {"created", created_}, {"model", model_id_}};
}

json ResponseBuilder::usage(const serving::CompletionSummary& s) const {
  return json{{"prompt_tokens", s.prompt_tokens},
              {"completion_tokens", s.completion_tokens},
              {"total_tokens", s.prompt_tokens + s.completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", s.cached_tokens}}}};
}

json ResponseBuilder::completion_logprobs(const std::vector<serving::TokenEvent>& events, size_t text_offset) const {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
  for (const auto& ev : events) {
    tokens.push_back(tokenizer_.token_to_piece(ev.token));
    token_logprobs.push_back(ev.logprob);
    json t = json::object();
    for (const auto& tl : ev.top) t[tokenizer_.token_to_piece(tl.id)] = tl.logprob;
    top.push_back(std::move(t));
    offsets.push_back(text_offset);
    text_offset += ev.text.size();
  }
  return json{{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

json ResponseBuilder::chat_logprobs(const std::vector<serving::TokenEvent>& events) const {
  json content = json::array();
  for (const auto& ev : events) {
    std::string piece = tokenizer_.token_to_piece(ev.token);
    json top = json::array();
    for (const auto& tl : ev.top) {
      std::string p = tokenizer_.token_to_piece(tl.id);
      top.push_back(json{{"token", p}, {"logprob", tl.logprob}, {"bytes", byte_array(p)}});
    }
    content.push_back(
        json{{"token", piece}, {"logprob", ev.logprob}, {"bytes", byte_array(piece)}, {"top_logprobs", top}});
  }
  return json{{"content", content}};
}

json ResponseBuilder::logprobs_of(const std::vector<serving::TokenEvent>& events, size_t text_offset) const {
  if (!logprobs_) return nullptr;
  return endpoint_ == Endpoint::kChat ? chat_logprobs(events) : completion_logprobs(events, text_offset);
}

json ResponseBuilder::token_chunk(const serving::TokenEvent& event) const {
  std::vector<serving::TokenEvent> one{event};
  if (endpoint_ == Endpoint::kChat) {
    json j = base("chat.completion.chunk");
    j["choices"] = json::array({json{{"index", 0},
                                     {"delta", {{"content", event.text}}},
                                     {"logprobs", logprobs_of(one, 0)},
                                     {"finish_reason", nullptr}}});
    return j;
  }
  json j = base("text_completion");
  j["choices"] = json::array(
      {json{{"index", 0}, {"text", event.text}, {"logprobs", logprobs_of(one, 0)}, {"finish_reason", nullptr}}});
  return j;
}

json ResponseBuilder::role_chunk() const {
  json j = base("chat.completion.chunk");
  j["choices"] = json::array({json{{"index", 0},
                                   {"delta", {{"role", "assistant"}, {"content", ""}}},
                                   {"logprobs", nullptr},
                                   {"finish_reason", nullptr}}});
  return j;
}

json ResponseBuilder::final_chunk(const serving::CompletionSummary& summary) const {
  std::string reason = openai_finish_reason(summary.finish_reason);
  if (endpoint_ == Endpoint::kChat) {
    json j = base("chat.completion.chunk");
    j["choices"] =
        json::array({json{{"index", 0}, {"delta", json::object()}, {"logprobs", nullptr}, {"finish_reason", reason}}});
    return j;
  }
  json j = base("text_completion");
  j["choices"] = json::array({json{{"index", 0}, {"text", ""}, {"logprobs", nullptr}, {"finish_reason", reason}}});
  return j;
}

json ResponseBuilder::usage_chunk(const serving::CompletionSummary& summary) const {
  json j = base(endpoint_ == Endpoint::kChat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = json::array();
  j["usage"] = usage(summary);
  return j;
}

void ResponseBuilder::add(const serving::TokenEvent& event) {
  text_ += event.text;
  if (logprobs_) events_.push_back(event);
}

json ResponseBuilder::body(const serving::CompletionSummary& summary) const {
  std::string reason = openai_finish_reason(summary.finish_reason);
  json j;
  if (endpoint_ == Endpoint::kChat) {
    j = base("chat.completion");
    j["choices"] = json::array({json{{"index", 0},
                                     {"message", {{"role", "assistant"}, {"content", text_}}},
                                     {"logprobs", logprobs_of(events_, 0)},
                                     {"finish_reason", reason}}});
  } else {
    j = base("text_completion");
    j["choices"] = json::array(
        {json{{"index", 0}, {"text", text_}, {"logprobs", logprobs_of(events_, 0)}, {"finish_reason", reason}}});
  }
  j["usage"] = usage(summary);
  return j;
}

}  // namespace baton::api
