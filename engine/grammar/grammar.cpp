#include "engine/grammar/grammar.h"

#include <algorithm>

#include "engine/grammar/grammar_check.h"

namespace baton::grammar {

bool CharClass::matches_some(uint32_t lo, uint32_t hi) const {
  if (!negated) {
    for (const CharRange& r : ranges)
      if (r.lo <= hi && r.hi >= lo) return true;
    return false;
  }
  // Negated: some point of [lo, hi] is outside every range. Walk the ranges that overlap it in
  // order of their start, looking for a gap.
  std::vector<CharRange> sorted(ranges);
  std::sort(sorted.begin(), sorted.end(), [](const CharRange& a, const CharRange& b) { return a.lo < b.lo; });
  uint64_t next = lo;  // the first point not yet known to be covered
  for (const CharRange& r : sorted) {
    if (r.hi < next) continue;
    if (r.lo > next) return true;
    next = static_cast<uint64_t>(r.hi) + 1;
    if (next > hi) return false;
  }
  return next <= hi;
}

void check_no_left_recursion(const Grammar& g) {
  const size_t n = g.n_rules();
  // Nullable rules (can match the empty string), to a fixpoint.
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (uint32_t start : g.alternatives[r]) {
        bool all = true;
        for (uint32_t p = start; g.code[p].kind != Symbol::Kind::kEnd && all; ++p)
          all = g.code[p].kind == Symbol::Kind::kRule && nullable[g.code[p].index];
        if (all) {
          nullable[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  // Edges r -> s when s can be the first thing r expands to; a cycle is left recursion.
  std::vector<std::vector<uint32_t>> first(n);
  for (size_t r = 0; r < n; ++r)
    for (uint32_t start : g.alternatives[r])
      for (uint32_t p = start; g.code[p].kind == Symbol::Kind::kRule; ++p) {
        first[r].push_back(g.code[p].index);
        if (!nullable[g.code[p].index]) break;
      }
  enum : uint8_t { kNew, kOpen, kDone };
  std::vector<uint8_t> state(n, kNew);
  // Iterative DFS (deep grammars must not overflow the stack).
  for (size_t s = 0; s < n; ++s) {
    if (state[s] != kNew) continue;
    std::vector<std::pair<uint32_t, size_t>> stack{{static_cast<uint32_t>(s), 0}};
    state[s] = kOpen;
    while (!stack.empty()) {
      auto& [r, i] = stack.back();
      if (i == first[r].size()) {
        state[r] = kDone;
        stack.pop_back();
        continue;
      }
      uint32_t t = first[r][i++];
      if (state[t] == kOpen)
        fail<GrammarError>("grammar: rule '{}' is left-recursive (it can reach itself without matching a character)",
                           g.rule_names[t]);
      if (state[t] == kNew) {
        state[t] = kOpen;
        stack.emplace_back(t, 0);
      }
    }
  }
}

}  // namespace baton::grammar
