// Internal to engine/chat: the per-family formatters behind ChatTemplate::apply().
#pragma once

#include <span>
#include <string>

#include "engine/chat/chat_template.h"

namespace baton::chat_detail {

// Formats `messages` (roles already validated: system, user or assistant) in `format`.
std::string format_chat(ChatFormat format, std::span<const ChatMessage> messages, bool add_generation_prompt);

}  // namespace baton::chat_detail
