// One tokenization algorithm (SPM, BPE, WPM) applied to a run of plain text: the special-token
// split, BOS/EOS and the SPM space prefix are handled by Tokenizer around it.
// Implementations hold only immutable state; encode() is thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace baton::tokenizer {

class Encoder {
 public:
  virtual ~Encoder() = default;
  // Appends the ids of `text` to `out`.
  virtual void encode(std::string_view text, std::vector<int32_t>& out) const = 0;
};

}  // namespace baton::tokenizer
