// Tokenizer behaviour beyond the upstream vectors: llama.cpp's prompt tokens and generated text
// for stories260K, streaming detokenization of split UTF-8, special-token parsing, metadata errors.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>

#include "engine/base/error.h"
#include "engine/tokenizer/utf8.h"
#include "fixtures.h"
#include "gguf/gguf_metadata.h"
#include "vocab_cases.h"

using namespace baton;
using tokenizer::StreamDetokenizer;
using tokenizer::Tokenizer;

namespace {

const Tokenizer& stories() {
  static auto tok = test::load_tokenizer(test::shared_path("models/stories260K.gguf"));
  return *tok;
}
const Tokenizer& llama_spm() {
  static auto tok = test::load_tokenizer(test::shared_path("models/vocab/ggml-vocab-llama-spm.gguf"));
  return *tok;
}
const Tokenizer& gpt2() {
  static auto tok = test::load_tokenizer(test::shared_path("models/vocab/ggml-vocab-gpt-2.gguf"));
  return *tok;
}
const Tokenizer& phi3() {
  static auto tok = test::load_tokenizer(test::shared_path("models/vocab/ggml-vocab-phi-3.gguf"));
  return *tok;
}

std::string stream_all(const Tokenizer& tok, const std::vector<int32_t>& ids,
                       std::vector<std::string>* parts = nullptr) {
  StreamDetokenizer stream(tok);
  std::string text;
  for (int32_t id : ids) {
    std::string part = stream.push(id);
    if (parts) parts->push_back(part);
    text += part;
  }
  return text + stream.flush();
}

bool is_valid_utf8(std::string_view s) { return tokenizer::utf8_sanitize(s) == s; }

gguf::Metadata tiny_spm_metadata() {
  gguf::Metadata md;
  md.set_string("tokenizer.ggml.model", "llama");
  md.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>",
                                                "\xE2\x96\x81"
                                                "a",
                                                "b"});
  md.set_float32_array("tokenizer.ggml.scores", {0, 0, 0, -1, -2});
  md.set_int32_array("tokenizer.ggml.token_type", {2, 3, 3, 1, 1});
  return md;
}

}  // namespace

TEST_CASE("stories260K prompts tokenize with BOS to llama.cpp's prompt_tokens and its outputs decode to its text") {
  const auto golden = nlohmann::json::parse(test::read_file(test::shared_path("golden/stories260K.json")));
  const Tokenizer& tok = stories();
  REQUIRE(tok.add_bos_default());
  REQUIRE(golden["cases"].size() == 8);
  for (const auto& c : golden["cases"]) {
    const std::string prompt = c["prompt"];
    INFO(prompt);
    CHECK(tok.encode(prompt, /*add_special=*/true, /*parse_special=*/false) ==
          c["prompt_tokens"].get<std::vector<int32_t>>());
    const auto tokens = c["tokens"].get<std::vector<int32_t>>();
    CHECK(tok.decode(tokens) == c["text"].get<std::string>());
    CHECK(stream_all(tok, tokens) == c["text"].get<std::string>());
  }
}

TEST_CASE("every golden file's prompts and outputs round-trip through its model's tokenizer") {
  namespace fs = std::filesystem;
  int files = 0;
  for (const char* sub : {"golden/synthetic", "golden/long"}) {
    for (const auto& entry : fs::directory_iterator(test::shared_path(sub))) {
      if (entry.path().extension() != ".json") continue;
      const auto golden = nlohmann::json::parse(test::read_file(entry.path().string()));
      const std::string model = golden["model"];
      const std::string rel =
          fs::exists(fs::path(test::shared_dir()) / "models" / model) ? "models/" + model : "models/synthetic/" + model;
      auto tok = test::load_tokenizer(test::shared_path(rel));
      INFO(entry.path().string());
      for (const auto& c : golden["cases"]) {
        CHECK(tok->encode(c["prompt"].get<std::string>(), true, false) ==
              c["prompt_tokens"].get<std::vector<int32_t>>());
        CHECK(tok->decode(c["tokens"].get<std::vector<int32_t>>()) == c["text"].get<std::string>());
      }
      ++files;
    }
  }
  CHECK(files >= 20);
}

TEST_CASE("the streaming detokenizer holds back a character split over byte tokens") {
  // SPM byte fallback: U+1F999 is not in the Llama vocabulary, so it becomes <0xF0><0x9F><0xA6><0x99>
  const std::string text = "llama \xF0\x9F\xA6\x99 and \xC3\x84pfel";
  const auto ids = llama_spm().encode(text, false, false);
  std::vector<std::string> parts;
  CHECK(stream_all(llama_spm(), ids, &parts) == " " + text);
  int empty = 0;
  for (const auto& p : parts) {
    CHECK(is_valid_utf8(p));
    empty += p.empty();
  }
  CHECK(empty >= 3);  // three of the four emoji bytes produced nothing yet
  CHECK(llama_spm().detokenize(ids) == text);
  CHECK(llama_spm().decode(ids) == " " + text);

  // byte-level BPE: a CJK character split across tokens
  const std::string cjk = "\xE6\x88\x91\xE6\x83\xB3\xE5\x9C\xA8 \xF0\x9F\x98\x81!";
  const auto bpe_ids = gpt2().encode(cjk, false, false);
  parts.clear();
  CHECK(stream_all(gpt2(), bpe_ids, &parts) == cjk);
  for (const auto& p : parts) CHECK(is_valid_utf8(p));

  // an incomplete character at the end is released by flush()
  StreamDetokenizer stream(llama_spm());
  CHECK(stream.push(llama_spm().find_token("<0xE6>")).empty());
  CHECK(stream.pending_bytes() == 1);
  CHECK(stream.flush() == "\xE6");
  CHECK(stream.pending_bytes() == 0);
}

TEST_CASE("detokenize inverts encode on the SPM vectors and cleans spaces for BPE") {
  const auto cases = test::load_vocab_cases(test::shared_path("models/vocab/ggml-vocab-llama-spm.gguf.inp"),
                                            test::shared_path("models/vocab/ggml-vocab-llama-spm.gguf.out"));
  for (const auto& c : cases) CHECK(llama_spm().detokenize(c.ids) == c.text);
  // with BOS first, the leading space stays (llama.cpp keeps it when the text follows BOS)
  CHECK(llama_spm().detokenize(llama_spm().encode("Hello", true, false)) == " Hello");
  CHECK(llama_spm().detokenize(llama_spm().encode("Hello", true, false), true) == "<s> Hello");
  // gpt-2 has clean_spaces: " ," and " 's" lose their space
  CHECK(gpt2().detokenize(gpt2().encode("Hello , it 's me", false, false)) == "Hello, it's me");
  CHECK(gpt2().decode(gpt2().encode("Hello , it 's me", false, false)) == "Hello , it 's me");
}

TEST_CASE("special tokens are parsed only when asked, longest first, and user-defined ones always") {
  const Tokenizer& spm = llama_spm();
  const auto on = spm.encode("<s>Hello</s>", false, true);
  REQUIRE(on.size() >= 3);
  CHECK(on.front() == spm.bos());
  CHECK(on.back() == spm.eos());
  const auto off = spm.encode("<s>Hello</s>", false, false);
  CHECK(std::find(off.begin(), off.end(), spm.bos()) == off.end());
  CHECK(std::find(off.begin(), off.end(), spm.eos()) == off.end());
  CHECK(spm.detokenize(off) == "<s>Hello</s>");
  // with BOS added by add_special
  CHECK(spm.encode("Hello", true, false).front() == spm.bos());
  CHECK(spm.encode("Hello", false, false) == std::vector<int32_t>{15043});

  const Tokenizer& g = gpt2();
  CHECK(g.encode("a<|endoftext|>b", false, true) == std::vector<int32_t>{g.find_token("a"), 50256, g.find_token("b")});
  const auto plain = g.encode("a<|endoftext|>b", false, false);
  CHECK(std::find(plain.begin(), plain.end(), 50256) == plain.end());
  CHECK(g.is_eog(50256));
  CHECK_FALSE(g.add_bos_default());

  // Phi-3: control tokens eat the whitespace to their right (rstrip), "</s>" is user-defined
  const Tokenizer& p = phi3();
  const int32_t user = p.find_token("<|user|>");
  const int32_t end = p.find_token("<|end|>");
  const auto chat = p.encode("<|user|>\nHi<|end|>\n", false, true);
  REQUIRE(chat.size() >= 3);
  CHECK(chat.front() == user);
  CHECK(chat.back() == end);
  CHECK(p.encode("<|user|>Hi", false, true) == p.encode("<|user|>\n  Hi", false, true));
  CHECK(p.is_eog(end));
  CHECK(p.eot() == end);
  // "</s>" is USER_DEFINED in the file, but llama.cpp counts it as end of generation and so as
  // CONTROL: with special-token parsing off it is plain text (issue 29, defect 7).
  const int32_t end_s = p.find_token("</s>");
  const auto s_off = p.encode("x</s>", false, false);
  CHECK(std::find(s_off.begin(), s_off.end(), end_s) == s_off.end());
  CHECK(s_off.size() > 2);
  CHECK(p.encode("x</s>", false, true).back() == end_s);
  CHECK(p.is_eog(end_s));
  CHECK(p.token_to_piece(end_s).empty());
  CHECK(p.token_to_piece(user).empty());
  CHECK(p.token_to_piece(user, /*special=*/true) == "<|user|>");
}

TEST_CASE("tokenizer metadata errors name the key and an unknown pre falls back to default") {
  SECTION("an unknown tokenizer model is unsupported") {
    auto md = tiny_spm_metadata();
    md.set_string("tokenizer.ggml.model", "t5x");
    CHECK_THROWS_AS(Tokenizer::from_metadata(md), UnsupportedError);
    CHECK_THROWS_WITH(Tokenizer::from_metadata(md), Catch::Contains("t5x"));
  }
  SECTION("a missing token list") {
    auto md = tiny_spm_metadata();
    md.erase("tokenizer.ggml.tokens");
    CHECK_THROWS_AS(Tokenizer::from_metadata(md), FormatError);
    CHECK_THROWS_WITH(Tokenizer::from_metadata(md), Catch::Contains("tokenizer.ggml.tokens"));
  }
  SECTION("scores of the wrong length") {
    auto md = tiny_spm_metadata();
    md.set_float32_array("tokenizer.ggml.scores", {0, 0});
    CHECK_THROWS_WITH(Tokenizer::from_metadata(md), Catch::Contains("tokenizer.ggml.scores"));
  }
  SECTION("unset and out-of-range special ids") {
    auto md = tiny_spm_metadata();
    md.set_uint32("tokenizer.ggml.bos_token_id", 0xFFFFFFFF);
    md.set_int32("tokenizer.ggml.eos_token_id", -1);
    md.set_uint32("tokenizer.ggml.padding_token_id", 99);
    auto tok = Tokenizer::from_metadata(md);
    CHECK(tok->bos() == tokenizer::kNoToken);
    CHECK(tok->eos() == tokenizer::kNoToken);
    CHECK(tok->pad() == tokenizer::kNoToken);
    CHECK_FALSE(tok->add_bos_default());  // nothing to add
    CHECK(tok->encode("a", true, false) == std::vector<int32_t>{3});
  }
  SECTION("a gpt2 vocabulary without merges") {
    auto md = tiny_spm_metadata();
    md.set_string("tokenizer.ggml.model", "gpt2");
    CHECK_THROWS_WITH(Tokenizer::from_metadata(md), Catch::Contains("tokenizer.ggml.merges"));
  }
  SECTION("an unknown pre-tokenizer is tokenized with the default one") {
    gguf::Metadata md;
    md.set_string("tokenizer.ggml.model", "gpt2");
    md.set_string("tokenizer.ggml.pre", "no-such-pre");
    md.set_string_array("tokenizer.ggml.tokens", {"a", "b", "ab", "\xC4\xA0"});
    md.set_string_array("tokenizer.ggml.merges", {"a b"});
    auto tok = Tokenizer::from_metadata(md);
    CHECK(tok->vocab().pre_name() == "default");
    CHECK(tok->encode("ab a", false, false) == std::vector<int32_t>{2, 3, 0});
  }
  SECTION("ids outside the vocabulary") {
    auto tok = Tokenizer::from_metadata(tiny_spm_metadata());
    CHECK_THROWS_AS(tok->token_to_piece(5), Error);
    CHECK_THROWS_WITH(tok->decode(std::vector<int32_t>{-1}), Catch::Contains("-1"));
  }
}

TEST_CASE("tokenizing 100 KB of text takes well under a second") {
  std::string text;
  const auto cases = test::load_vocab_cases(test::shared_path("models/vocab/ggml-vocab-gpt-2.gguf.inp"),
                                            test::shared_path("models/vocab/ggml-vocab-gpt-2.gguf.out"));
  while (text.size() < 100 * 1024)
    for (const auto& c : cases) text += c.text + " The quick brown fox jumps over the lazy dog. ";
  for (const char* name : {"models/vocab/ggml-vocab-gpt-2.gguf", "models/vocab/ggml-vocab-llama-spm.gguf",
                           "models/vocab/ggml-vocab-bert-bge.gguf", "models/vocab/ggml-vocab-deepseek-llm.gguf"}) {
    auto tok = test::load_tokenizer(test::shared_path(name));
    const auto t0 = std::chrono::steady_clock::now();
    const auto ids = tok->encode(text, false, true);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO(name << ": " << ids.size() << " tokens in " << s << " s");
    CHECK(ids.size() > 10000);
#if defined(__SANITIZE_ADDRESS__) || !defined(NDEBUG)
    WARN(name << ": " << s << " s (timing not checked in sanitizer/debug builds)");
#else
    CHECK(s < 0.5);
#endif
  }
}

TEST_CASE("long runs of one character class and malformed UTF-8 tokenize without error") {
  const std::string spaces(200000, ' ');
  const std::string newlines(100000, '\n');
  const std::string bangs(100000, '!');
  const std::string digits(100000, '7');
  const std::string letters(100000, 'a');
  // (a truncated sequence is followed by 'x': SPM, like llama.cpp, cuts characters by their lead
  // byte, so a following escaped space would be swallowed into byte tokens and stay U+2581)
  const std::string bad = "ok \xFF\xFE bad \xE6\x88x cut \xC3";
  for (const char* name : {"models/vocab/ggml-vocab-gpt-2.gguf", "models/vocab/ggml-vocab-llama-spm.gguf",
                           "models/vocab/ggml-vocab-bert-bge.gguf", "models/vocab/ggml-vocab-deepseek-llm.gguf",
                           "models/vocab/ggml-vocab-falcon.gguf"}) {
    INFO(name);
    auto tok = test::load_tokenizer(test::shared_path(name));
    for (const std::string* text : {&spaces, &newlines, &bangs, &digits, &letters, &bad}) {
      std::vector<int32_t> ids;
      CHECK_NOTHROW(ids = tok->encode(*text, true, true));
      if (tok->vocab().kind() == tokenizer::VocabKind::kBpe && text != &bad) CHECK(tok->decode(ids) == *text);
    }
  }
  // SPM keeps malformed bytes exactly, through <0xXX> tokens
  CHECK(llama_spm().detokenize(llama_spm().encode(bad, false, false)) == bad);
  // byte-level BPE replaces them by U+FFFD, as llama.cpp does
  CHECK(gpt2().decode(gpt2().encode(bad, false, false)) == tokenizer::utf8_sanitize(bad));
}
