// POST /v1/responses bodies (OpenAI's Responses API, text in and text out) -> the chat
// completion the engine runs. The input (a string, or a list of messages whose content is a
// string or input_text / output_text parts) and `instructions` (a first system message) become
// chat messages; `max_output_tokens`, `temperature`, `top_p` and llama.cpp's sampling extras are
// read by the chat completions parser, so they are checked the same way. Every rejection is a
// 400 naming the field: stored state (`previous_response_id`, `conversation`, `store: true`,
// `background: true`), non-text input parts, tools and non-text output formats. Pure: no I/O.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "engine/api/openai_request.h"

namespace baton::api {

struct ResponsesRequest {
  GenerationRequest generation;  // a chat completion (endpoint kChat)
  // The request fields a response object repeats: instructions, max_output_tokens, metadata,
  // temperature, top_p, text, tool_choice, tools, truncation, user (as sent, or their defaults).
  nlohmann::json echo;
};

// `seed_if_absent` is used when the request has no seed.
ResponsesRequest parse_responses_request(std::string_view body, uint32_t seed_if_absent);

}  // namespace baton::api
