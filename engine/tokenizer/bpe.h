// Byte-level BPE (tokenizer.ggml.model "gpt2"): split the text with the pre-tokenizer's regexes,
// map each piece's bytes through GPT-2's byte->Unicode table, then repeatedly merge the adjacent
// pair with the lowest merge rank (leftmost on ties). Malformed UTF-8 in the input is replaced by
// U+FFFD first, as llama.cpp does.
#pragma once

#include "engine/tokenizer/encoder.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/vocab.h"

namespace baton::tokenizer {

class BpeEncoder final : public Encoder {
 public:
  // Uses the pre-tokenizer named by vocab.pre_name(). Throws if its regexes do not compile.
  explicit BpeEncoder(const Vocab& vocab);
  void encode(std::string_view text, std::vector<int32_t>& out) const override;

 private:
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  const Vocab& vocab_;
  RegexSplitter splitter_;
};

}  // namespace baton::tokenizer
