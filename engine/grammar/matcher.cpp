#include "engine/grammar/matcher.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace baton::grammar {

namespace {

constexpr size_t kStackIndexFrom = 32;  // below: a linear scan is cheaper than hashing
// Expansions within a step before finished states are remembered: the grammars we build take
// a handful, and remembering costs a copy of the state.
constexpr size_t kMemoFrom = 32;

uint64_t hash_of_stack(std::span<const uint32_t> stack) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ stack.size();
  for (uint32_t v : stack) h = (h ^ v) * 0x100000001B3ull + (h >> 29);
  return h;
}

}  // namespace

bool StackSet::add_unique(std::span<const uint32_t> stack) {
  if (index.empty()) {
    for (size_t i = 0; i < size(); ++i) {
      auto s = at(i);
      if (s.size() == stack.size() && std::equal(s.begin(), s.end(), stack.begin())) return false;
    }
    data.insert(data.end(), stack.begin(), stack.end());
    offsets.push_back(static_cast<uint32_t>(data.size()));
    if (size() > kStackIndexFrom) rebuild_index();
    return true;
  }
  const size_t mask = index.size() - 1;
  for (size_t slot = hash_of_stack(stack) & mask;; slot = (slot + 1) & mask) {
    if (index[slot] == 0) {
      data.insert(data.end(), stack.begin(), stack.end());
      offsets.push_back(static_cast<uint32_t>(data.size()));
      index[slot] = static_cast<uint32_t>(size());
      if (size() * 2 > index.size()) rebuild_index();
      return true;
    }
    auto s = at(index[slot] - 1);
    if (s.size() == stack.size() && std::equal(s.begin(), s.end(), stack.begin())) return false;
  }
}

void StackSet::rebuild_index() {
  size_t capacity = 64;
  while (capacity < size() * 4) capacity *= 2;
  index.assign(capacity, 0);
  const size_t mask = capacity - 1;
  for (size_t i = 0; i < size(); ++i) {
    size_t slot = hash_of_stack(at(i)) & mask;
    while (index[slot] != 0) slot = (slot + 1) & mask;
    index[slot] = static_cast<uint32_t>(i + 1);
  }
}

Matcher::Matcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  // The start: every alternative of the root rule, expanded.
  work_.clear();
  begin_expansion();
  const Grammar& g = *grammar_;
  for (uint32_t start : g.alternatives[g.root]) {
    if (g.code[start].kind != Symbol::Kind::kEnd) work_.push_back(start);
    expand(work_, stacks_);
    work_.clear();
  }
}

void Matcher::begin_expansion() {
  expanded_.clear();
  expansion_steps_ = 0;
}

void Matcher::expand(std::vector<uint32_t>& work, StackSet& out) {
  if (++expansion_steps_ > kMaxExpansionSteps)
    fail<GrammarLimitError>(
        "grammar: too ambiguous: one character needs more than {} rule expansions to follow (the matcher's limit; "
        "alternatives that match the same text, such as nested optional or empty ones, multiply them)",
        kMaxExpansionSteps);
  const Grammar& g = *grammar_;
  if (work.empty() || g.code[work.back()].kind == Symbol::Kind::kChars) {
    if (out.add_unique(work) && out.size() > kMaxParseStacks)
      fail<GrammarLimitError>(
          "grammar: too ambiguous: more than {} parse states alive at once (the matcher's limit; alternatives "
          "that match the same text, such as nested optional or empty ones, multiply them)",
          kMaxParseStacks);
    return;
  }
  // A state expanded before in this step already has all its stacks in `out`: the paths to it
  // are many in an ambiguous grammar, its expansion is needed once.
  if (expansion_steps_ > kMemoFrom && !expanded_.add_unique(work)) return;
  const uint32_t pos = work.back();
  const Symbol sym = g.code[pos];
  // A rule reference: replace it by what follows it, then each alternative's first symbol.
  work.pop_back();
  const bool more = g.code[pos + 1].kind != Symbol::Kind::kEnd;
  if (more) work.push_back(pos + 1);
  for (uint32_t start : g.alternatives[sym.index]) {
    if (g.code[start].kind != Symbol::Kind::kEnd) {
      work.push_back(start);
      expand(work, out);
      work.pop_back();
    } else {
      expand(work, out);
    }
  }
  if (more) work.pop_back();
  work.push_back(pos);
}

void Matcher::advance(const StackSet& in, uint32_t cp, StackSet& out) {
  const Grammar& g = *grammar_;
  out.clear();
  begin_expansion();
  for (size_t i = 0; i < in.size(); ++i) {
    auto s = in.at(i);
    if (s.empty()) continue;
    const uint32_t pos = s.back();
    if (!g.classes[g.code[pos].index].matches(cp)) continue;
    work_.assign(s.begin(), s.end() - 1);
    if (g.code[pos + 1].kind != Symbol::Kind::kEnd) work_.push_back(pos + 1);
    expand(work_, out);
  }
}

bool Matcher::partial_viable(const StackSet& stacks, const Utf8Partial& partial) const {
  const Grammar& g = *grammar_;
  const uint32_t shift = 6u * partial.remaining;
  // Every multi-byte character is >= U+0080 (overlong forms are refused).
  const uint32_t lo = std::max(partial.value << shift, 0x80u), hi = (partial.value << shift) | ((1u << shift) - 1);
  if (lo > hi) return false;
  for (size_t i = 0; i < stacks.size(); ++i) {
    auto s = stacks.at(i);
    if (!s.empty() && g.classes[g.code[s.back()].index].matches_some(lo, hi)) return true;
  }
  return false;
}

bool Matcher::step(const StackSet& in, const Utf8Partial& partial, uint8_t byte, StackSet& out, Utf8Partial& next) {
  next = partial;
  if (partial.remaining == 0) {
    if (byte < 0x80) {
      advance(in, byte, out);
      return !out.empty();
    }
    // 0xC0/0xC1 only start overlong encodings of ASCII, 0xF5.. nothing valid.
    if (byte == 0xC0 || byte == 0xC1 || byte >= 0xF5) return false;
    if ((byte & 0xE0) == 0xC0) next = {byte & 0x1Fu, 1};
    else if ((byte & 0xF0) == 0xE0) next = {byte & 0x0Fu, 2};
    else if ((byte & 0xF8) == 0xF0) next = {byte & 0x07u, 3};
    else return false;
  } else {
    if ((byte & 0xC0) != 0x80) return false;
    next.value = (partial.value << 6) | (byte & 0x3Fu);
    --next.remaining;
    if (next.remaining == 0) {
      const uint32_t cp = next.value;
      next = {};
      if (cp < 0x80) return false;  // an overlong encoding of ASCII
      advance(in, cp, out);
      return !out.empty();
    }
  }
  // Still inside a character: the stacks do not move; keep them while the character can match.
  if (!partial_viable(in, next)) return false;
  if (&out != &in) out = in;
  return true;
}

bool Matcher::accept(std::string_view bytes) {
  StackSet cur = stacks_, next;
  Utf8Partial partial = partial_, np;
  for (char c : bytes) {
    if (!step(cur, partial, static_cast<uint8_t>(c), next, np)) return false;
    std::swap(cur, next);
    partial = np;
  }
  stacks_ = std::move(cur);
  partial_ = partial;
  return true;
}

bool Matcher::can_end() const {
  if (partial_.remaining != 0) return false;
  for (size_t i = 0; i < stacks_.size(); ++i)
    if (stacks_.at(i).empty()) return true;
  return false;
}

bool Matcher::can_continue() const {
  for (size_t i = 0; i < stacks_.size(); ++i)
    if (!stacks_.at(i).empty()) return true;
  return false;
}

void Matcher::mask(const VocabTrie& trie, std::vector<uint8_t>& allowed) {
  allowed.assign(trie.n_vocab(), 0);
  // Sized before the walk: walk() holds references into it.
  if (depth_sets_.size() < trie.max_depth() + 1) depth_sets_.resize(trie.max_depth() + 1);
  walk(trie, 0, 0, stacks_, partial_, allowed);
}

void Matcher::walk(const VocabTrie& trie, uint32_t node_id, size_t depth, const StackSet& stacks,
                   const Utf8Partial& partial, std::vector<uint8_t>& allowed) {
  const VocabTrie::Node& node = trie.node(node_id);
  for (uint32_t e = 0; e < node.n_edges; ++e) {
    const VocabTrie::Edge& edge = trie.edge(node.first_edge + e);
    StackSet& out = depth_sets_[depth];
    Utf8Partial next;
    // Inside a character the stacks do not change: pass the parent's on without a copy.
    const bool completes = partial.remaining <= 1 && !(partial.remaining == 0 && edge.byte >= 0x80);
    bool ok;
    const StackSet* child_stacks = &out;
    if (completes) {
      ok = step(stacks, partial, edge.byte, out, next);
    } else {
      ok = step(stacks, partial, edge.byte, const_cast<StackSet&>(stacks), next);
      child_stacks = &stacks;
    }
    if (!ok) continue;
    const VocabTrie::Node& child = trie.node(edge.child);
    for (uint32_t t = 0; t < child.n_tokens; ++t) allowed[static_cast<size_t>(trie.token(child.first_token + t))] = 1;
    if (child.n_edges > 0) walk(trie, edge.child, depth + 1, *child_stacks, next, allowed);
  }
}

}  // namespace baton::grammar
