#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/chat/chat_template.h"
#include "fixtures.h"
#include "gguf/gguf_file.h"
#include "llama_cpp_reference_cases.h"

using namespace baton;
using baton::test::kChatReferenceCases;
using baton::test::shared_path;

namespace {

// The conversation of llama.cpp's test-chat-template.
const std::vector<ChatMessage> kConversation = {
    {"system", "You are a helpful assistant"},
    {"user", "Hello"},
    {"assistant", "Hi there"},
    {"user", "Who are you"},
    {"assistant", "   I am an assistant   "},
    {"user", "Another question"},
};

std::string apply_named(std::string_view name, bool add_generation_prompt = true) {
  return ChatTemplate::from_name(name).apply(kConversation, add_generation_prompt);
}

std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const UnsupportedError& e) {
    return e.what();
  }
  return "<no UnsupportedError>";
}

}  // namespace

TEST_CASE("every llama.cpp reference template is detected as the family llama.cpp picks") {
  for (const auto& c : kChatReferenceCases) {
    INFO(c.model);
    const auto tmpl = ChatTemplate::detect(c.jinja);
    REQUIRE(tmpl.has_value());
    CHECK(tmpl->name() == c.family);
  }
}

TEST_CASE("every llama.cpp reference template formats the conversation byte for byte") {
  for (const auto& c : kChatReferenceCases) {
    INFO(c.model);
    const ChatTemplate tmpl = ChatTemplate::from_model(std::string(c.jinja));
    CHECK(tmpl.apply(kConversation, true) == c.expected);
  }
}

TEST_CASE("families without a llama.cpp reference vector follow its formatting rules") {
  // Expected strings written from llama.cpp's llm_chat_apply_template rules for each family.
  CHECK(apply_named("llama2-sys") ==
        "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s>"
        "[INST] Who are you [/INST]   I am an assistant   </s>[INST] Another question [/INST]");
  CHECK(apply_named("zephyr") ==
        "<|system|>\nYou are a helpful assistant<|endoftext|>\n<|user|>\nHello<|endoftext|>\n"
        "<|assistant|>\nHi there<|endoftext|>\n<|user|>\nWho are you<|endoftext|>\n"
        "<|assistant|>\n   I am an assistant   <|endoftext|>\n<|user|>\nAnother question"
        "<|endoftext|>\n<|assistant|>\n");
  CHECK(apply_named("falcon3") ==
        "<|system|>\nYou are a helpful assistant\n<|user|>\nHello\n<|assistant|>\nHi there\n"
        "<|user|>\nWho are you\n<|assistant|>\n   I am an assistant   \n<|user|>\n"
        "Another question\n<|assistant|>\n");
  CHECK(apply_named("mistral-v7-tekken") ==
        "[SYSTEM_PROMPT]You are a helpful assistant[/SYSTEM_PROMPT][INST]Hello[/INST]Hi there</s>"
        "[INST]Who are you[/INST]   I am an assistant   </s>[INST]Another question[/INST]");
  CHECK(apply_named("deepseek3") ==
        "You are a helpful assistant\n\n<｜User｜>Hello<｜Assistant｜>Hi there<｜end▁of▁sentence｜>"
        "<｜User｜>Who are you<｜Assistant｜>   I am an assistant   <｜end▁of▁sentence｜>"
        "<｜User｜>Another question<｜Assistant｜>");
  CHECK(apply_named("exaone3") ==
        "[|system|]You are a helpful assistant[|endofturn|]\n[|user|]Hello\n"
        "[|assistant|]Hi there[|endofturn|]\n[|user|]Who are you\n"
        "[|assistant|]I am an assistant[|endofturn|]\n[|user|]Another question\n[|assistant|]");
  CHECK(apply_named("llama4") ==
        "<|header_start|>system<|header_end|>\n\nYou are a helpful assistant<|eot|>"
        "<|header_start|>user<|header_end|>\n\nHello<|eot|>"
        "<|header_start|>assistant<|header_end|>\n\nHi there<|eot|>"
        "<|header_start|>user<|header_end|>\n\nWho are you<|eot|>"
        "<|header_start|>assistant<|header_end|>\n\nI am an assistant<|eot|>"
        "<|header_start|>user<|header_end|>\n\nAnother question<|eot|>"
        "<|header_start|>assistant<|header_end|>\n\n");
}

TEST_CASE("the distinctive substrings of the remaining families are recognised") {
  const std::string zephyr = "{{ '<|user|>\\n' + message['content'] + '<|endoftext|>' }}";
  CHECK(ChatTemplate::detect(zephyr)->name() == "zephyr");
  CHECK(ChatTemplate::detect("{{ '<|user|>' }}{{ '<|assistant|>' }}{{ '</s>' }}")->name() == "falcon3");
  CHECK(ChatTemplate::detect("{{ '[INST] <<SYS>>\\n' + system }}")->name() == "llama2-sys");
  CHECK(ChatTemplate::detect("<|header_start|>user<|header_end|>")->name() == "llama4");
  CHECK(ChatTemplate::detect("[|system|]x[|assistant|]y[|endofturn|]")->name() == "exaone3");
  CHECK(ChatTemplate::detect("<｜User｜>a<｜Assistant｜>b<｜end▁of▁sentence｜>")->name() == "deepseek3");
  // Precedence follows llama.cpp: <|im_start|> wins over everything, [INST] over <<SYS>> alone.
  CHECK(ChatTemplate::detect("<|im_start|>[INST]<start_of_turn>")->name() == "chatml");
  CHECK(ChatTemplate::detect("<start_of_turn>user<|start_header_id|><|end_header_id|>")->name() == "gemma");
}

TEST_CASE("a family is selectable by each of its names and the name round-trips") {
  for (const std::string_view name : ChatTemplate::known_names()) {
    INFO(name);
    CHECK(ChatTemplate::from_name(name).name() == name);
    CHECK(ChatTemplate::detect(name)->name() == name);
  }
  CHECK(ChatTemplate::known_names().size() == 33);
}

TEST_CASE("the generation prompt is appended only when asked, where the family has one") {
  const std::vector<ChatMessage> one = {{"user", "Hi"}};
  CHECK(ChatTemplate::from_name("chatml").apply(one, true) ==
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  CHECK(ChatTemplate::from_name("chatml").apply(one, false) == "<|im_start|>user\nHi<|im_end|>\n");
  CHECK(ChatTemplate::from_name("llama3").apply(one, false) ==
        "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
  // llama2 always ends after the user turn, with or without the flag.
  CHECK(ChatTemplate::from_name("llama2").apply(one, true) == "[INST] Hi [/INST]");
  CHECK(ChatTemplate::from_name("llama2").apply(one, false) == "[INST] Hi [/INST]");
  CHECK(ChatTemplate::from_name("chatml").apply({}, true) == "<|im_start|>assistant\n");
}

TEST_CASE("a model without a chat template falls back to chatml") {
  CHECK(ChatTemplate::from_model(std::nullopt).name() == "chatml");
  const auto file = gguf::GgufFile::open(shared_path("models/stories260K.gguf"));
  CHECK(ChatTemplate::from_metadata(file->metadata()).name() == "chatml");
}

TEST_CASE("the phi-3 vocabulary fixture's chat template is detected as phi3") {
  const auto file = gguf::GgufFile::open(shared_path("models/vocab/ggml-vocab-phi-3.gguf"));
  const ChatTemplate tmpl = ChatTemplate::from_metadata(file->metadata());
  CHECK(tmpl.name() == "phi3");
  CHECK(tmpl.apply(std::vector<ChatMessage>{{"user", "Hi"}}, true) == "<|user|>\nHi<|end|>\n<|assistant|>\n");
}

TEST_CASE("the qwen2 tokenizer_config.json chat template is detected as chatml") {
  std::ifstream in(shared_path("models/vocab/qwen2-hf/tokenizer_config.json"));
  const auto config = nlohmann::json::parse(in);
  const ChatTemplate tmpl = ChatTemplate::from_model(config.at("chat_template").get<std::string>());
  CHECK(tmpl.name() == "chatml");
}

TEST_CASE("an unrecognised template is refused with its beginning quoted and the names listed") {
  const std::string ling =
      "{% for message in messages %}{% set role = message['role'] | lower %}{% if role == 'user' "
      "%}{% set role = 'HUMAN' %}{% endif %}{% set role = role | upper %}{{ '<role>' + role + "
      "'</role>' + message['content'] }}{% endfor %}{% if add_generation_prompt %}{{ "
      "'<role>ASSISTANT</role>' }}{% endif %}";
  const std::string message = error_of([&] { ChatTemplate::from_model(ling); });
  CHECK_THAT(message, Catch::Contains("tokenizer.chat_template"));
  CHECK_THAT(message, Catch::Contains("{% for message in messages %}{% set role"));
  CHECK_THAT(message, Catch::Contains("chatml, llama2, llama2-sys"));
  CHECK_THAT(message, Catch::Contains("megrez"));
  CHECK_FALSE(ChatTemplate::detect("INVALID TEMPLATE").has_value());
  CHECK_THROWS_AS(ChatTemplate::from_model(std::string("INVALID TEMPLATE")), UnsupportedError);
  // Families llama.cpp knows but we do not format are refused, not guessed.
  CHECK_FALSE(ChatTemplate::detect("<|im_start|>User:<end_of_utterance>").has_value());
  CHECK_FALSE(ChatTemplate::detect("[|system|][|assistant|][|endofturn|][|tool|]").has_value());
}

TEST_CASE("an unknown template name is refused with the known names listed") {
  const std::string message = error_of([] { ChatTemplate::from_name("chatml2"); });
  CHECK_THAT(message, Catch::Contains("\"chatml2\""));
  CHECK_THAT(message, Catch::Contains("llama3"));
  CHECK_THAT(message, Catch::Contains("mistral-v7-tekken"));
}

TEST_CASE("a message with a role other than system, user or assistant is refused by index") {
  const std::vector<ChatMessage> messages = {{"user", "Hi"}, {"tool", "42"}};
  try {
    ChatTemplate::from_name("chatml").apply(messages, true);
    FAIL("no exception");
  } catch (const Error& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("chat message 1"));
    CHECK_THAT(std::string(e.what()), Catch::Contains("\"tool\""));
  }
}
