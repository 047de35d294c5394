// A context-free grammar over Unicode code points in the precompiled form the matcher runs:
// every rule is a list of alternatives, every alternative a sequence of symbols (a character
// class or a reference to a rule) laid out in one flat array and closed by an end marker, so
// a parse position is one uint32 index. Repetitions and groups of the source text have
// already been rewritten into helper rules (gbnf_parser.h). Immutable once built; shared by
// every sequence that decodes under it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/error.h"

namespace baton::grammar {

// A grammar text or a JSON schema that cannot be turned into a grammar (the message says
// where and why). The API answers it with 400.
class GrammarError : public Error {
 public:
  using Error::Error;
};
// A grammar refused for the work it would take, not for its text: repetitions that spell out
// too many symbols (gbnf_parser.h), or a start or a step past the matcher's bounds (matcher.h).
class GrammarLimitError : public GrammarError {
 public:
  using GrammarError::GrammarError;
};

struct CharRange {
  uint32_t lo = 0, hi = 0;  // inclusive
};

struct CharClass {
  bool negated = false;
  std::vector<CharRange> ranges;

  bool matches(uint32_t cp) const {
    bool in = false;
    for (const CharRange& r : ranges) in |= cp >= r.lo && cp <= r.hi;
    return in != negated;
  }
  // Whether some code point in [lo, hi] matches (for an incomplete UTF-8 character).
  bool matches_some(uint32_t lo, uint32_t hi) const;
};

struct Symbol {
  enum class Kind : uint8_t { kEnd, kChars, kRule };
  Kind kind = Kind::kEnd;
  uint32_t index = 0;  // into Grammar::classes (kChars) or the rules (kRule)
};

struct Grammar {
  std::vector<CharClass> classes;
  std::vector<Symbol> code;                         // every alternative, each closed by kEnd
  std::vector<std::vector<uint32_t>> alternatives;  // per rule: where its alternatives start in code
  std::vector<std::string> rule_names;
  uint32_t root = 0;

  size_t n_rules() const { return alternatives.size(); }
};

}  // namespace baton::grammar
