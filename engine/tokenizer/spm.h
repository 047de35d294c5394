// SentencePiece-style BPE over a scored vocabulary (tokenizer.ggml.model "llama"), as llama.cpp
// implements it: start from UTF-8 characters, repeatedly merge the adjacent pair whose
// concatenation is the highest-scoring token (leftmost on ties), then fall back to <0xXX> byte
// tokens for any character that is not a token.
#pragma once

#include "engine/tokenizer/encoder.h"
#include "engine/tokenizer/vocab.h"

namespace baton::tokenizer {

class SpmEncoder final : public Encoder {
 public:
  explicit SpmEncoder(const Vocab& vocab) : vocab_(vocab) {}
  // `text` must already have its spaces escaped to U+2581 (Tokenizer does that).
  void encode(std::string_view text, std::vector<int32_t>& out) const override;

 private:
  const Vocab& vocab_;
};

}  // namespace baton::tokenizer
