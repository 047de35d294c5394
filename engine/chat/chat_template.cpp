// Chat template names, detection from a template's text, and the checked entry to formatting.
#include "engine/chat/chat_template.h"

#include <spdlog/spdlog.h>

#include <array>
#include <utility>

#include "engine/base/error.h"
#include "engine/chat/chat_formats.h"
#include "gguf/gguf_metadata.h"

namespace baton {

namespace {

constexpr std::array<std::pair<std::string_view, ChatFormat>, 33> kNames = {{
    {"chatml", ChatFormat::kChatml},
    {"llama2", ChatFormat::kLlama2},
    {"llama2-sys", ChatFormat::kLlama2Sys},
    {"llama2-sys-bos", ChatFormat::kLlama2SysBos},
    {"llama2-sys-strip", ChatFormat::kLlama2SysStrip},
    {"mistral-v1", ChatFormat::kMistralV1},
    {"mistral-v3", ChatFormat::kMistralV3},
    {"mistral-v3-tekken", ChatFormat::kMistralV3Tekken},
    {"mistral-v7", ChatFormat::kMistralV7},
    {"mistral-v7-tekken", ChatFormat::kMistralV7Tekken},
    {"phi3", ChatFormat::kPhi3},
    {"phi4", ChatFormat::kPhi4},
    {"falcon3", ChatFormat::kFalcon3},
    {"zephyr", ChatFormat::kZephyr},
    {"monarch", ChatFormat::kMonarch},
    {"gemma", ChatFormat::kGemma},
    {"orion", ChatFormat::kOrion},
    {"openchat", ChatFormat::kOpenchat},
    {"vicuna", ChatFormat::kVicuna},
    {"vicuna-orca", ChatFormat::kVicunaOrca},
    {"deepseek", ChatFormat::kDeepseek},
    {"deepseek2", ChatFormat::kDeepseek2},
    {"deepseek3", ChatFormat::kDeepseek3},
    {"command-r", ChatFormat::kCommandR},
    {"llama3", ChatFormat::kLlama3},
    {"chatglm3", ChatFormat::kChatglm3},
    {"chatglm4", ChatFormat::kChatglm4},
    {"glmedge", ChatFormat::kGlmedge},
    {"minicpm", ChatFormat::kMinicpm},
    {"exaone3", ChatFormat::kExaone3},
    {"granite", ChatFormat::kGranite},
    {"megrez", ChatFormat::kMegrez},
    {"llama4", ChatFormat::kLlama4},
}};

std::optional<ChatFormat> format_by_name(std::string_view name) {
  for (const auto& [n, f] : kNames) {
    if (n == name) return f;
  }
  return std::nullopt;
}

std::string known_names_list() {
  std::string out;
  for (const auto& entry : kNames) {
    if (!out.empty()) out += ", ";
    out += entry.first;
  }
  return out;
}

// The first `max_chars` of a template, on one line, for an error message.
std::string quote_start(std::string_view text, size_t max_chars = 160) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < max_chars; ++i) {
    const char c = text[i];
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  if (text.size() > max_chars) out += "...";
  return out;
}

// The family of a Jinja template, by the substrings llama.cpp's llm_chat_detect_template looks
// for, tested in its order (a template may contain several markers: the order decides).
// Families llama.cpp knows but we do not format give nullopt.
std::optional<ChatFormat> format_by_text(std::string_view t) {
  const auto has = [t](std::string_view s) { return t.find(s) != std::string_view::npos; };

  if (has("<|im_start|>")) {
    if (has("<|im_sep|>")) return ChatFormat::kPhi4;
    if (has("<end_of_utterance>")) return std::nullopt;  // SmolVLM: <|im_start|> is its BOS
    return ChatFormat::kChatml;
  }
  if (t.starts_with("mistral") || has("[INST]")) {
    if (has("[SYSTEM_PROMPT]")) return ChatFormat::kMistralV7;
    if (has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]")) {
      if (has(" [INST]")) return ChatFormat::kMistralV1;
      if (has("\"[INST]\"")) return ChatFormat::kMistralV3Tekken;
      return ChatFormat::kMistralV3;
    }
    if (has("content.strip()")) return ChatFormat::kLlama2SysStrip;
    if (has("bos_token + '[INST]")) return ChatFormat::kLlama2SysBos;
    if (has("<<SYS>>")) return ChatFormat::kLlama2Sys;
    return ChatFormat::kLlama2;
  }
  if (has("<|assistant|>") && has("<|end|>")) return ChatFormat::kPhi3;
  if (has("[gMASK]<sop>")) return ChatFormat::kChatglm4;
  if (has("<|assistant|>") && has("<|user|>")) {
    return has("</s>") ? ChatFormat::kFalcon3 : ChatFormat::kGlmedge;
  }
  if (has("<|{{ item['role'] }}|>") && has("<|begin_of_image|>")) return ChatFormat::kGlmedge;
  if (has("<|user|>") && has("<|endoftext|>")) return ChatFormat::kZephyr;
  if (has("bos_token + message['role']")) return ChatFormat::kMonarch;
  if (has("<start_of_turn>")) return ChatFormat::kGemma;
  if (has("'\\n\\nAssistant: ' + eos_token")) return ChatFormat::kOrion;
  if (has("GPT4 Correct ")) return ChatFormat::kOpenchat;
  if (has("USER: ") && has("ASSISTANT: ")) {
    return has("SYSTEM: ") ? ChatFormat::kVicunaOrca : ChatFormat::kVicuna;
  }
  if (has("### Instruction:") && has("<|EOT|>")) return ChatFormat::kDeepseek;
  if (has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>")) return ChatFormat::kCommandR;
  if (has("<|start_header_id|>") && has("<|end_header_id|>")) return ChatFormat::kLlama3;
  if (has("[gMASK]sop")) return ChatFormat::kChatglm3;
  if (has("<用户>")) return ChatFormat::kMinicpm;
  if (has("'Assistant: ' + message['content'] + eos_token")) return ChatFormat::kDeepseek2;
  // fullwidth bars (U+FF5C) and U+2581 in place of spaces
  if (has("<｜Assistant｜>") && has("<｜User｜>") && has("<｜end▁of▁sentence｜>")) {
    return ChatFormat::kDeepseek3;
  }
  if (has("[|system|]") && has("[|assistant|]") && has("[|endofturn|]")) {
    if (has("[|tool|]")) return std::nullopt;  // EXAONE 4: not formatted here
    return ChatFormat::kExaone3;
  }
  if (has("rwkv-world") || has("{{- 'User: ' + message['content']|trim + '\\n\\n' -}}")) {
    return std::nullopt;  // RWKV world: not formatted here (it must win over the checks below)
  }
  if (has("<|start_of_role|>")) return ChatFormat::kGranite;
  if (has("message['role'] + additional_special_tokens[0] + message['content'] + "
          "additional_special_tokens[1]")) {
    return std::nullopt;  // GigaChat: not formatted here
  }
  if (has("<|role_start|>")) return ChatFormat::kMegrez;
  if (has(" Ассистент:")) return std::nullopt;                               // YandexGPT: not formatted here
  if (has("<role>ASSISTANT</role>") && has("'HUMAN'")) return std::nullopt;  // Ling: not here
  if (has("<|header_start|>") && has("<|header_end|>")) return ChatFormat::kLlama4;
  return std::nullopt;
}

}  // namespace

ChatTemplate ChatTemplate::from_model(const std::optional<std::string>& jinja_template) {
  if (!jinja_template) {
    spdlog::info("model has no tokenizer.chat_template: using the chatml chat template");
    return ChatTemplate(ChatFormat::kChatml);
  }
  if (auto found = detect(*jinja_template)) return *found;
  fail<UnsupportedError>(
      "chat template not recognised (GGUF key tokenizer.chat_template, {} bytes): \"{}\"; "
      "choose one by name instead: {}",
      jinja_template->size(), quote_start(*jinja_template), known_names_list());
}

ChatTemplate ChatTemplate::from_metadata(const gguf::Metadata& metadata) {
  return from_model(metadata.find_string("tokenizer.chat_template"));
}

ChatTemplate ChatTemplate::from_name(std::string_view name) {
  if (auto format = format_by_name(name)) return ChatTemplate(*format);
  fail<UnsupportedError>("unknown chat template name \"{}\"; known names: {}", name, known_names_list());
}

std::optional<ChatTemplate> ChatTemplate::detect(std::string_view name_or_template) {
  if (auto format = format_by_name(name_or_template)) return ChatTemplate(*format);
  if (auto format = format_by_text(name_or_template)) return ChatTemplate(*format);
  return std::nullopt;
}

std::vector<std::string_view> ChatTemplate::known_names() {
  std::vector<std::string_view> names;
  names.reserve(kNames.size());
  for (const auto& entry : kNames) names.push_back(entry.first);
  return names;
}

std::string_view ChatTemplate::name() const {
  for (const auto& [n, f] : kNames) {
    if (f == format_) return n;
  }
  return "unknown";  // unreachable: every ChatFormat has a name
}

std::string ChatTemplate::apply(std::span<const ChatMessage> messages, bool add_generation_prompt) const {
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& role = messages[i].role;
    // "ipython": Llama 3.1+'s role for tool results (engine/chat/tool_calls.h writes it).
    const bool tool_result = role == "ipython" && format_ == ChatFormat::kLlama3;
    if (role != "system" && role != "user" && role != "assistant" && !tool_result) {
      fail("chat message {}: role \"{}\" is not one of system, user, assistant", i, role);
    }
  }
  return chat_detail::format_chat(format_, messages, add_generation_prompt);
}

}  // namespace baton
