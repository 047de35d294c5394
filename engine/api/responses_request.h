// POST /v1/responses bodies (OpenAI's Responses API) -> the chat completion the engine runs.
// The input (a string, or a list of items: messages whose content is a string or input_text /
// output_text parts, function_call items an earlier response returned, and function_call_output
// items carrying their results) and `instructions` (a first system message) become chat
// messages (calls as an assistant's tool_calls, results as "tool" messages). Function `tools`,
// `tool_choice` and `text.format` (json_object / json_schema) become chat's tools, tool_choice and
// response_format, so the chat parser checks them and the same grammar machinery enforces them.
// `max_output_tokens`, `temperature`, `top_p` and llama.cpp's sampling extras are read by the
// chat parser too. Every rejection is a 400 naming the field: stored state
// (`previous_response_id`, `conversation`, `store: true`, `background: true`), non-text input
// parts, tool types other than "function". Pure: no I/O.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "engine/api/openai_request.h"

namespace baton::api {

struct ResponsesRequest {
  GenerationRequest generation;  // a chat completion (endpoint kChat)
  // The request fields a response object repeats: instructions, max_output_tokens, metadata,
  // parallel_tool_calls, temperature, top_p, text, tool_choice, tools, truncation, user (as
  // sent, or their defaults).
  nlohmann::json echo;
};

// `seed_if_absent` is used when the request has no seed.
ResponsesRequest parse_responses_request(std::string_view body, uint32_t seed_if_absent);

}  // namespace baton::api
