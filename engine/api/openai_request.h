// OpenAI request bodies -> what the engine runs. Pure functions, no I/O: JSON text in, plain
// structs out. Every rejection is an ApiError (400) whose message and `param` name the field
// ("'temperature' must be a number, got string"); malformed JSON names the byte offset.
// A field given as null counts as absent. Unknown fields are ignored, as OpenAI's clients
// send many this server has no use for.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/chat/tool_calls.h"
#include "engine/serving/scheduler.h"

namespace baton::api {

enum class Endpoint { kCompletions, kChat };

// The prompt of /v1/completions: text (tokenized by the server, BOS per the model) or ids
// (used as they are).
struct PromptInput {
  bool is_text = true;
  std::string text;
  std::vector<int32_t> tokens;
};

struct GenerationRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;                  // as sent; informational (one model is served)
  PromptInput prompt;                 // completions
  std::vector<ChatMessage> messages;  // chat
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool logprobs = false;       // report per-token log-probabilities
  size_t top_logprobs = 0;     // completions: logprobs = N; chat: top_logprobs = N
  // Constrained output (structured_request.h): GBNF from response_format, grammar or
  // json_schema ("" = free text); chat's tools and tool_choice.
  std::string grammar;
  std::vector<ToolDefinition> tools;
  ToolChoice tool_choice;
  // CompletionRequest without the prompt (filled once the prompt is tokenized).
  serving::CompletionRequest engine;
};

// Parses the body of POST /v1/completions or /v1/chat/completions. `seed_if_absent` is used
// when the request has no seed (the server passes a random one).
GenerationRequest parse_generation_request(std::string_view body, Endpoint endpoint, uint32_t seed_if_absent);

struct TokenizeRequest {
  std::string content;
  bool add_special = false;
  bool with_pieces = false;
};
TokenizeRequest parse_tokenize_request(std::string_view body);

// POST /detokenize {"tokens": [ids]}.
std::vector<int32_t> parse_detokenize_request(std::string_view body);

}  // namespace baton::api
