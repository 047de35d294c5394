// The chat-completions side of function calling and constrained output, between parsing and
// the scheduler: the prompt with the tools in the template's syntax, the grammar that
// constrains sampling (response_format / grammar / json_schema, or a forced tool call), and
// the model's reply turned into tool_calls (whole responses and streams).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/api/openai_request.h"
#include "engine/grammar/token_constraint.h"
#include "engine/tokenizer/tokenizer.h"

namespace baton::api {

// The chat prompt text: tool messages and earlier calls rewritten, tools described (unless
// tool_choice is "none"). Throws baton::Error from the template (a role it cannot format).
std::string chat_prompt_text(const GenerationRequest& r, const ChatTemplate& tmpl);

// The constraint for the scheduler, or null. `tmpl` is the chat template (null for
// completions). Throws ApiError 400 when the grammar or a tool's schema cannot be compiled.
std::shared_ptr<const grammar::CompiledConstraint> build_constraint(const GenerationRequest& r,
                                                                    const ChatTemplate* tmpl,
                                                                    const tokenizer::Tokenizer& tokenizer);

// Whole chat response: when the reply holds calls, message.tool_calls (content null when no
// other text) and finish_reason "tool_calls".
void attach_tool_calls(nlohmann::json& body, const GenerationRequest& r, const ChatTemplate& tmpl);

// Streaming with tools: the reply is held back until it ends (it must be parsed first), then
// sent as these chunks: a content delta and/or one delta.tool_calls chunk per call, then
// `final_chunk` with finish_reason "tool_calls" when there were calls.
std::vector<nlohmann::json> tool_stream_chunks(const std::string& text, nlohmann::json final_chunk,
                                               const GenerationRequest& r, const ChatTemplate& tmpl);

}  // namespace baton::api
