// Incremental recognition of a Grammar, byte by byte, and the token mask of the current state.
//
// State: the set of parse stacks still alive (each a list of positions in Grammar::code, the
// top always a character class; an empty stack means the input so far is a complete sentence)
// plus a partial UTF-8 character. A byte either completes a character, which advances every
// stack whose top class matches it (then expands rule references, depth first), or extends the
// partial character, which is kept when some top class matches a code point it could become.
//
// mask(): walks the VocabTrie depth first with one state per depth; a byte that leaves no
// stack prunes its subtree, so the cost is the number of trie nodes the grammar allows, not
// the vocabulary size. Not thread-safe: one matcher per sequence.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "engine/grammar/grammar.h"
#include "engine/grammar/vocab_trie.h"

namespace baton::grammar {

// Bounds on the work of one step (one byte, or the start), so that no grammar a client sends
// can make the matcher run for long (docs/SECURITY.md). Past either, the step throws a
// GrammarLimitError naming the limit: CompiledConstraint::build checks the start with them, so a
// grammar already too ambiguous there is a 400 before it reaches the scheduler.
inline constexpr size_t kMaxParseStacks = 1024;         // parse stacks alive after a step
inline constexpr size_t kMaxExpansionSteps = 1u << 16;  // rule expansions within a step

// Stacks stored flat: stack i is data[offsets[i], offsets[i+1]). Reused without reallocating.
// Small sets are searched linearly; past a few dozen stacks a hash index is kept alongside.
struct StackSet {
  std::vector<uint32_t> data;
  std::vector<uint32_t> offsets{0};
  std::vector<uint32_t> index;  // open addressing: stack number + 1, 0 = free; empty while small
  size_t size() const { return offsets.size() - 1; }
  bool empty() const { return size() == 0; }
  std::span<const uint32_t> at(size_t i) const { return {data.data() + offsets[i], offsets[i + 1] - offsets[i]}; }
  void clear() {
    data.clear();
    offsets.resize(1);
    index.clear();
  }
  // Adds `stack` unless an equal one is there; true when added.
  bool add_unique(std::span<const uint32_t> stack);

 private:
  void rebuild_index();
};

struct Utf8Partial {
  uint32_t value = 0;     // the bits read so far
  uint8_t remaining = 0;  // continuation bytes still expected
};

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const Grammar> grammar);

  // Feeds bytes; false (and the state unchanged) when they cannot continue the grammar.
  bool accept(std::string_view bytes);
  // The input so far is a complete sentence (end of generation may come now).
  bool can_end() const;
  // Some character can still follow (false: the sentence is complete and nothing may follow).
  bool can_continue() const;

  // allowed[id] = 1 when token id's bytes can continue the grammar (the trie's tokens), 0 for
  // every other token; `allowed` is resized to trie.n_vocab(). End-of-generation tokens are
  // the caller's (they are not in the trie).
  void mask(const VocabTrie& trie, std::vector<uint8_t>& allowed);

 private:
  // stacks after `byte`, into `out`; false when none is left (or the byte is invalid UTF-8).
  bool step(const StackSet& in, const Utf8Partial& partial, uint8_t byte, StackSet& out, Utf8Partial& out_partial);
  void advance(const StackSet& in, uint32_t cp, StackSet& out);
  void expand(std::vector<uint32_t>& work, StackSet& out);
  void begin_expansion();
  bool partial_viable(const StackSet& stacks, const Utf8Partial& partial) const;
  void walk(const VocabTrie& trie, uint32_t node, size_t depth, const StackSet& stacks, const Utf8Partial& partial,
            std::vector<uint8_t>& allowed);

  std::shared_ptr<const Grammar> grammar_;
  StackSet stacks_;
  Utf8Partial partial_;
  std::vector<uint32_t> work_;  // scratch stack for expand()
  // Within one step: the states whose expansion is done (an ambiguous grammar reaches the
  // same state along many paths: ("" | "" | ...){4} once took 37 s), and the expansions made.
  StackSet expanded_;
  size_t expansion_steps_ = 0;
  std::vector<StackSet> depth_sets_;  // mask(): one state per trie depth
};

}  // namespace baton::grammar
