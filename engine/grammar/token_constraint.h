// Constrained decoding for one sequence: before the sampler picks, every token whose bytes
// cannot continue the grammar gets logit -inf (end-of-generation tokens only where the grammar
// may end); after it picks, the grammar state moves over the chosen token's bytes. Lives in the
// sequence, so it runs wherever sampling runs (the coordinator of a cluster).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "engine/grammar/matcher.h"

namespace baton::tokenizer {
class Tokenizer;
}

namespace baton::grammar {

// Immutable and shared: the compiled grammar, the vocabulary's trie and its end tokens.
struct CompiledConstraint {
  std::shared_ptr<const Grammar> grammar;
  std::shared_ptr<const VocabTrie> trie;
  std::vector<int32_t> eog_tokens;

  // Parses `gbnf` (GrammarError) and attaches the tokenizer's trie (built once per vocabulary).
  static std::shared_ptr<const CompiledConstraint> build(std::string_view gbnf, const tokenizer::Tokenizer& tokenizer);
};

class TokenConstraint {
 public:
  explicit TokenConstraint(std::shared_ptr<const CompiledConstraint> compiled);

  // logits[id] = -inf for every token the grammar does not allow now. Throws baton::Error when
  // no token is allowed (the vocabulary cannot spell any continuation).
  void apply(std::span<float> logits);
  // Moves over the sampled token. Throws baton::Error if the grammar rejects it.
  void accept(int32_t token);
  // The output is a complete sentence and nothing may follow it: the sequence can end now.
  bool complete() const { return matcher_.can_end() && !matcher_.can_continue(); }

 private:
  std::shared_ptr<const CompiledConstraint> compiled_;
  Matcher matcher_;
  std::vector<uint8_t> allowed_;
};

}  // namespace baton::grammar
