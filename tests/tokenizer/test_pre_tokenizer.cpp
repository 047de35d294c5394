// Pre-tokenizer regexes: every listed pre compiles under PCRE2, and the common ones split text
// the way their Hugging Face tokenizers do.
#include <catch2/catch.hpp>

#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/wpm.h"

using namespace baton::tokenizer;

namespace {

std::vector<std::string> split(std::string_view pre, std::string_view text) {
  const PreTokenizerSpec* spec = find_pre_tokenizer(pre);
  REQUIRE(spec);
  RegexSplitter splitter(spec->patterns);
  std::vector<std::string> out;
  for (auto piece : splitter.split(text)) out.emplace_back(piece);
  return out;
}

using V = std::vector<std::string>;

}  // namespace

TEST_CASE("every pre-tokenizer's regexes compile and split text into pieces that concatenate back") {
  const std::string text =
      "Hello, y'all! How are you \xF0\x9F\x98\x81 ?\xE6\x88\x91\xE6\x83\xB3 apple1314151\n\n  \t x";
  for (auto name : pre_tokenizer_names()) {
    INFO(name);
    const PreTokenizerSpec* spec = find_pre_tokenizer(name);
    REQUIRE(spec);
    RegexSplitter splitter(spec->patterns);
    std::string joined;
    for (auto piece : splitter.split(text)) {
      CHECK_FALSE(piece.empty());
      joined += piece;
    }
    CHECK(joined == text);
  }
  CHECK(find_pre_tokenizer("no-such-pre") == nullptr);
  CHECK(find_pre_tokenizer("llama-bpe") == find_pre_tokenizer("llama3"));
}

TEST_CASE("GPT-2, Llama 3 and Qwen2 pre-tokenizers split like their tokenizer.json regexes") {
  CHECK(split("gpt-2", "Hello world's  123456!!") == V{"Hello", " world", "'s", " ", " 123456", "!!"});
  CHECK(split("llama3", "Hello WORLD'S  123456!!\n\n x") ==
        V{"Hello", " WORLD", "'S", " ", " ", "123", "456", "!!\n\n", " x"});
  CHECK(split("qwen2", "abc 2024") == V{"abc", " ", "2", "0", "2", "4"});
  CHECK(split("starcoder", "x=12") == V{"x", "=", "1", "2"});
  CHECK(split("deepseek-coder", "ab 12\ncd") == V{"ab", " ", "1", "2", "\n", "cd"});
  CHECK(split("gpt-2", "  a") == V{" ", " a"});  // \s+(?!\S) leaves the last space to the word
}

TEST_CASE("WordPiece normalisation lowercases, strips accents and isolates punctuation and CJK") {
  CHECK(WpmEncoder::split_words("C\xE1\xBB\xAD"
                                "a Vi\xE1\xBB\x87t, \xC3\x84pfel!") == V{"cua", "viet", ",", "apfel", "!"});
  CHECK(WpmEncoder::split_words("\xE6\x88\x91\xE6\x83\xB3go") == V{"\xE6\x88\x91", "\xE6\x83\xB3", "go"});
  CHECK(WpmEncoder::split_words("a\xE2\x80\x8D"
                                "b\tc") == V{"ab", "c"});  // ZWJ (format) is dropped
}
