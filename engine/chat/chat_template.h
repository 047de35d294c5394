// Chat templates: a conversation -> one prompt string, for the families llama.cpp formats
// without a Jinja engine. The family is detected from the GGUF's tokenizer.chat_template by
// the same distinctive substrings, in the same order, as llama.cpp's llm_chat_detect_template,
// or chosen by name (--chat-template), and each family's output is byte-identical to
// llama.cpp's llm_chat_apply_template.
//
// Non-goals: running Jinja (a template is only recognised, never executed), tool calls, and
// roles other than system/user/assistant.
//
// The prompt never starts with BOS: tokenize it with add_special = true (the tokenizer adds
// BOS when the model wants it) and parse_special = true (so <|im_start|> etc. become their
// special tokens).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace baton {

namespace gguf {
class Metadata;
}

// A function call an assistant message made (OpenAI's tool_calls[i]); arguments is JSON text.
struct ChatToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

struct ChatMessage {
  ChatMessage() = default;
  // Not an aggregate: {role, content} stays valid (and warning-free) with the tool fields.
  ChatMessage(std::string role_, std::string content_, std::vector<ChatToolCall> tool_calls_ = {},
              std::string tool_call_id_ = {})
      : role(std::move(role_)),
        content(std::move(content_)),
        tool_calls(std::move(tool_calls_)),
        tool_call_id(std::move(tool_call_id_)) {}

  std::string role;  // "system", "user" or "assistant" (and "tool" before tool_calls.h renders it)
  std::string content;
  std::vector<ChatToolCall> tool_calls;  // assistant: the calls it made
  std::string tool_call_id;              // tool: the call this result answers
};

enum class ChatFormat {
  kChatml,
  kLlama2,
  kLlama2Sys,
  kLlama2SysBos,
  kLlama2SysStrip,
  kMistralV1,
  kMistralV3,
  kMistralV3Tekken,
  kMistralV7,
  kMistralV7Tekken,
  kPhi3,
  kPhi4,
  kFalcon3,
  kZephyr,
  kMonarch,
  kGemma,
  kOrion,
  kOpenchat,
  kVicuna,
  kVicunaOrca,
  kDeepseek,
  kDeepseek2,
  kDeepseek3,
  kCommandR,
  kLlama3,
  kLlama4,
  kChatglm3,
  kChatglm4,
  kGlmedge,
  kMinicpm,
  kExaone3,
  kGranite,
  kMegrez,
};

// An immutable value: which family, and how to format it. Cheap to copy; thread-safe.
class ChatTemplate {
 public:
  // The GGUF's tokenizer.chat_template text (or nullopt when the model has none).
  // Absent -> chatml, as llama.cpp does, with a log line saying so.
  // Present but unrecognised -> baton::UnsupportedError quoting its beginning and listing the
  // known names (choose one with from_name).
  static ChatTemplate from_model(const std::optional<std::string>& jinja_template);
  // from_model() on the key tokenizer.chat_template of a GGUF's metadata.
  static ChatTemplate from_metadata(const gguf::Metadata& metadata);
  // By name ("chatml", "llama3", "mistral-v7", ... see known_names()).
  // Unknown -> baton::UnsupportedError listing the known names.
  static ChatTemplate from_name(std::string_view name);
  // A name, or else a template's text, to a family; nullopt when neither is recognised.
  static std::optional<ChatTemplate> detect(std::string_view name_or_template);
  // Every name from_name() accepts, in a stable order.
  static std::vector<std::string_view> known_names();

  explicit ChatTemplate(ChatFormat format) : format_(format) {}

  ChatFormat format() const { return format_; }
  std::string_view name() const;

  // The prompt for `messages`, ending with the assistant's turn opener when
  // add_generation_prompt is set and the family has one (some families, e.g. llama2, always
  // end the prompt after the last user turn and ignore the flag, as in llama.cpp).
  // Throws baton::Error naming the message index when a role is not system/user/assistant.
  std::string apply(std::span<const ChatMessage> messages, bool add_generation_prompt) const;

 private:
  ChatFormat format_;
};

}  // namespace baton
