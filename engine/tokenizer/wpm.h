// WordPiece (tokenizer.ggml.model "bert") as the Hugging Face BERT tokenizer does it: drop
// control characters, map whitespace to spaces, isolate CJK ideographs, strip accents (NFD, then
// drop non-spacing marks), lowercase; split on whitespace and punctuation; then each word is
// matched greedily longest-first against the vocabulary, whose word-initial pieces carry a
// U+2581 prefix in GGUF (continuations carry none). A word that cannot be covered, or has more
// than 100 characters, becomes the unknown token. Unicode data comes from ICU.
#pragma once

#include <string>

#include "engine/tokenizer/encoder.h"
#include "engine/tokenizer/vocab.h"

namespace baton::tokenizer {

class WpmEncoder final : public Encoder {
 public:
  explicit WpmEncoder(const Vocab& vocab) : vocab_(vocab) {}
  void encode(std::string_view text, std::vector<int32_t>& out) const override;

  // The normalised words of `text` (exposed for tests).
  static std::vector<std::string> split_words(std::string_view text);

 private:
  const Vocab& vocab_;
};

}  // namespace baton::tokenizer
