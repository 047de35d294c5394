// One formatter per chat family. Each reproduces llama.cpp's llm_chat_apply_template output
// for that family byte for byte (including its quirks: which families trim content, which
// ignore add_generation_prompt, how a system message is folded into the first user turn).
#include "engine/chat/chat_formats.h"

#include <cctype>
#include <string_view>

namespace baton::chat_detail {

namespace {

using Messages = std::span<const ChatMessage>;

// Strips ASCII whitespace (as C isspace) from both ends.
std::string_view trim(std::string_view s) {
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  size_t begin = 0;
  size_t end = s.size();
  while (begin < end && space(s[begin])) ++begin;
  while (end > begin && space(s[end - 1])) --end;
  return s.substr(begin, end - begin);
}

// Concatenates pieces onto `out`.
template <class... Pieces>
void put(std::string& out, const Pieces&... pieces) {
  (out.append(std::string_view(pieces)), ...);
}

// Families that wrap every message the same way: prefix role middle content suffix.
struct Wrap {
  std::string_view before_role;
  std::string_view after_role;
  std::string_view after_content;
  bool trim_content;
  std::string_view generation_prompt;
};

std::string format_wrapped(const Wrap& w, Messages messages, bool add_gen) {
  std::string out;
  for (const ChatMessage& m : messages) {
    put(out, w.before_role, m.role, w.after_role, w.trim_content ? trim(m.content) : std::string_view(m.content),
        w.after_content);
  }
  if (add_gen) put(out, w.generation_prompt);
  return out;
}

std::string format_llama2(ChatFormat format, Messages messages) {
  const bool system_block = format != ChatFormat::kLlama2;
  const bool bos_in_history = format == ChatFormat::kLlama2SysBos;
  const bool strip = format == ChatFormat::kLlama2SysStrip;
  std::string out = "[INST] ";
  bool in_turn = true;  // the opening [INST] is already written
  for (const ChatMessage& m : messages) {
    const std::string_view content = strip ? trim(m.content) : std::string_view(m.content);
    if (!in_turn) {
      put(out, bos_in_history ? "<s>[INST] " : "[INST] ");
      in_turn = true;
    }
    if (m.role == "system") {
      if (system_block) {
        put(out, "<<SYS>>\n", content, "\n<</SYS>>\n\n");
      } else {
        put(out, content, "\n");
      }
    } else if (m.role == "user") {
      put(out, content, " [/INST]");
    } else {
      put(out, content, "</s>");
      in_turn = false;
    }
  }
  return out;
}

// v1: " [INST] ", v3: "[INST] " (assistant content trimmed), v3-tekken: "[INST]".
std::string format_mistral_v1_v3(ChatFormat format, Messages messages) {
  const std::string_view lead = format == ChatFormat::kMistralV1 ? " " : "";
  const std::string_view trail = format == ChatFormat::kMistralV3Tekken ? "" : " ";
  const bool trim_assistant = format == ChatFormat::kMistralV3;
  std::string out;
  bool in_turn = false;
  for (const ChatMessage& m : messages) {
    if (!in_turn) {
      put(out, lead, "[INST]", trail);
      in_turn = true;
    }
    if (m.role == "system") {
      put(out, m.content, "\n\n");
    } else if (m.role == "user") {
      put(out, m.content, lead, "[/INST]");
    } else {
      put(out, trail, trim_assistant ? trim(m.content) : std::string_view(m.content), "</s>");
      in_turn = false;
    }
  }
  return out;
}

std::string format_mistral_v7(ChatFormat format, Messages messages) {
  const std::string_view space = format == ChatFormat::kMistralV7 ? " " : "";
  std::string out;
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      put(out, "[SYSTEM_PROMPT]", space, m.content, "[/SYSTEM_PROMPT]");
    } else if (m.role == "user") {
      put(out, "[INST]", space, m.content, "[/INST]");
    } else {
      put(out, space, m.content, "</s>");
    }
  }
  return out;
}

std::string format_monarch(Messages messages, bool add_gen) {
  std::string out;
  for (size_t i = 0; i < messages.size(); ++i) {
    put(out, i == 0 ? "" : "<s>", messages[i].role, "\n", messages[i].content, "</s>\n");
  }
  if (add_gen) put(out, "<s>assistant\n");
  return out;
}

// No system role: system text (trimmed) opens the next user turn. "assistant" is "model".
std::string format_gemma(Messages messages, bool add_gen) {
  std::string out;
  std::string system;
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      put(system, trim(m.content));
      continue;
    }
    const std::string_view role = m.role == "assistant" ? "model" : "user";
    put(out, "<start_of_turn>", role, "\n");
    if (!system.empty() && role != "model") {
      put(out, system, "\n\n");
      system.clear();
    }
    put(out, trim(m.content), "<end_of_turn>\n");
  }
  if (add_gen) put(out, "<start_of_turn>model\n");
  return out;
}

std::string format_orion(Messages messages) {
  std::string out;
  std::string system;
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      put(system, m.content);
    } else if (m.role == "user") {
      put(out, "Human: ");
      if (!system.empty()) {
        put(out, system, "\n\n");
        system.clear();
      }
      put(out, m.content, "\n\nAssistant: </s>");
    } else {
      put(out, m.content, "</s>");
    }
  }
  return out;
}

std::string format_openchat(Messages messages, bool add_gen) {
  std::string out;
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      put(out, m.content, "<|end_of_turn|>");
    } else {
      put(out, "GPT4 Correct ", m.role == "user" ? "User" : "Assistant", ": ", m.content, "<|end_of_turn|>");
    }
  }
  if (add_gen) put(out, "GPT4 Correct Assistant:");
  return out;
}

std::string format_vicuna(ChatFormat format, Messages messages, bool add_gen) {
  std::string out;
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      if (format == ChatFormat::kVicunaOrca) {
        put(out, "SYSTEM: ", m.content, "\n");
      } else {
        put(out, m.content, "\n\n");
      }
    } else if (m.role == "user") {
      put(out, "USER: ", m.content, "\n");
    } else {
      put(out, "ASSISTANT: ", m.content, "</s>\n");
    }
  }
  if (add_gen) put(out, "ASSISTANT:");
  return out;
}

// Families with one text before each role's content and one after.
struct PerRole {
  std::string_view system_before, system_after;
  std::string_view user_before, user_after;
  std::string_view assistant_before, assistant_after;
  bool trim_content;
  std::string_view generation_prompt;
};

std::string format_per_role(const PerRole& r, Messages messages, bool add_gen) {
  std::string out;
  for (const ChatMessage& m : messages) {
    const std::string_view content = r.trim_content ? trim(m.content) : std::string_view(m.content);
    if (m.role == "system") {
      put(out, r.system_before, content, r.system_after);
    } else if (m.role == "user") {
      put(out, r.user_before, content, r.user_after);
    } else {
      put(out, r.assistant_before, content, r.assistant_after);
    }
  }
  if (add_gen) put(out, r.generation_prompt);
  return out;
}

const PerRole kDeepseek = {
    "", "", "### Instruction:\n", "\n", "### Response:\n", "\n<|EOT|>\n", false, "### Response:\n"};
const PerRole kDeepseek2 = {"", "\n\n", "User: ", "\n\n", "Assistant: ", "<｜end▁of▁sentence｜>", false, "Assistant:"};
const PerRole kDeepseek3 = {"",    "\n\n",           "<｜User｜>", "", "<｜Assistant｜>", "<｜end▁of▁sentence｜>",
                            false, "<｜Assistant｜>"};
const PerRole kCommandR = {"<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>",
                           "<|END_OF_TURN_TOKEN|>",
                           "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>",
                           "<|END_OF_TURN_TOKEN|>",
                           "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
                           "<|END_OF_TURN_TOKEN|>",
                           true,
                           "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"};
const PerRole kExaone3 = {"[|system|]",    "[|endofturn|]\n", "[|user|]", "\n",
                          "[|assistant|]", "[|endofturn|]\n", true,       "[|assistant|]"};
// MiniCPM has no generation prompt: the user turn already ends with <AI>.
const PerRole kMinicpm = {"", "", "<用户>", "<AI>", "", "", true, ""};

const Wrap kChatml = {"<|im_start|>", "\n", "<|im_end|>\n", false, "<|im_start|>assistant\n"};
const Wrap kPhi3 = {"<|", "|>\n", "<|end|>\n", false, "<|assistant|>\n"};
const Wrap kPhi4 = {"<|im_start|>", "<|im_sep|>", "<|im_end|>", false, "<|im_start|>assistant<|im_sep|>"};
const Wrap kFalcon3 = {"<|", "|>\n", "\n", false, "<|assistant|>\n"};
const Wrap kZephyr = {"<|", "|>\n", "<|endoftext|>\n", false, "<|assistant|>\n"};
const Wrap kLlama3 = {"<|start_header_id|>", "<|end_header_id|>\n\n", "<|eot_id|>", true,
                      "<|start_header_id|>assistant<|end_header_id|>\n\n"};
const Wrap kLlama4 = {"<|header_start|>", "<|header_end|>\n\n", "<|eot|>", true,
                      "<|header_start|>assistant<|header_end|>\n\n"};
const Wrap kChatglm3 = {"<|", "|>\n ", "", false, "<|assistant|>"};
const Wrap kChatglm4 = {"<|", "|>\n", "", false, "<|assistant|>\n"};
const Wrap kGlmedge = {"<|", "|>\n", "", false, "<|assistant|>"};
const Wrap kGranite = {"<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>\n", false,
                       "<|start_of_role|>assistant<|end_of_role|>"};
const Wrap kMegrez = {"<|role_start|>", "<|role_end|>", "<|turn_end|>", false, "<|role_start|>assistant<|role_end|>"};

}  // namespace

std::string format_chat(ChatFormat format, Messages messages, bool add_gen) {
  switch (format) {
    case ChatFormat::kChatml: return format_wrapped(kChatml, messages, add_gen);
    case ChatFormat::kLlama2:
    case ChatFormat::kLlama2Sys:
    case ChatFormat::kLlama2SysBos:
    case ChatFormat::kLlama2SysStrip: return format_llama2(format, messages);
    case ChatFormat::kMistralV1:
    case ChatFormat::kMistralV3:
    case ChatFormat::kMistralV3Tekken: return format_mistral_v1_v3(format, messages);
    case ChatFormat::kMistralV7:
    case ChatFormat::kMistralV7Tekken: return format_mistral_v7(format, messages);
    case ChatFormat::kPhi3: return format_wrapped(kPhi3, messages, add_gen);
    case ChatFormat::kPhi4: return format_wrapped(kPhi4, messages, add_gen);
    case ChatFormat::kFalcon3: return format_wrapped(kFalcon3, messages, add_gen);
    case ChatFormat::kZephyr: return format_wrapped(kZephyr, messages, add_gen);
    case ChatFormat::kMonarch: return format_monarch(messages, add_gen);
    case ChatFormat::kGemma: return format_gemma(messages, add_gen);
    case ChatFormat::kOrion: return format_orion(messages);
    case ChatFormat::kOpenchat: return format_openchat(messages, add_gen);
    case ChatFormat::kVicuna:
    case ChatFormat::kVicunaOrca: return format_vicuna(format, messages, add_gen);
    case ChatFormat::kDeepseek: return format_per_role(kDeepseek, messages, add_gen);
    case ChatFormat::kDeepseek2: return format_per_role(kDeepseek2, messages, add_gen);
    case ChatFormat::kDeepseek3: return format_per_role(kDeepseek3, messages, add_gen);
    case ChatFormat::kCommandR: return format_per_role(kCommandR, messages, add_gen);
    case ChatFormat::kLlama3: return format_wrapped(kLlama3, messages, add_gen);
    case ChatFormat::kLlama4: return format_wrapped(kLlama4, messages, add_gen);
    case ChatFormat::kChatglm3: return "[gMASK]sop" + format_wrapped(kChatglm3, messages, add_gen);
    case ChatFormat::kChatglm4: return "[gMASK]<sop>" + format_wrapped(kChatglm4, messages, add_gen);
    case ChatFormat::kGlmedge: return format_wrapped(kGlmedge, messages, add_gen);
    case ChatFormat::kMinicpm: return format_per_role(kMinicpm, messages, false);
    case ChatFormat::kExaone3: return format_per_role(kExaone3, messages, add_gen);
    case ChatFormat::kGranite: return format_wrapped(kGranite, messages, add_gen);
    case ChatFormat::kMegrez: return format_wrapped(kMegrez, messages, add_gen);
  }
  return {};  // unreachable: the switch covers every ChatFormat
}

}  // namespace baton::chat_detail
