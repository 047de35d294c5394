#include "engine/grammar/vocab_trie.h"

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>

#include "engine/tokenizer/tokenizer.h"

namespace baton::grammar {

VocabTrie::VocabTrie(const std::vector<std::string>& pieces) : pieces_(pieces), n_vocab_(pieces.size()) {
  // Sorting the pieces puts every subtree's tokens next to each other: the trie is built in one
  // pass, depth first, with each node's edges contiguous.
  std::vector<int32_t> order;
  for (size_t i = 0; i < pieces.size(); ++i)
    if (!pieces[i].empty()) order.push_back(static_cast<int32_t>(i));
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return pieces[static_cast<size_t>(a)] < pieces[static_cast<size_t>(b)] ||
           (pieces[static_cast<size_t>(a)] == pieces[static_cast<size_t>(b)] && a < b);
  });
  for (int32_t id : order) max_depth_ = std::max(max_depth_, pieces[static_cast<size_t>(id)].size());
  nodes_.emplace_back();
  // build(node, [lo, hi) of order sharing the first `depth` bytes)
  std::function<void(uint32_t, size_t, size_t, size_t)> build = [&](uint32_t node, size_t lo, size_t hi, size_t depth) {
    size_t i = lo;
    const uint32_t first_token = static_cast<uint32_t>(tokens_.size());
    while (i < hi && pieces[static_cast<size_t>(order[i])].size() == depth) tokens_.push_back(order[i++]);
    nodes_[node].first_token = first_token;
    nodes_[node].n_tokens = static_cast<uint32_t>(tokens_.size()) - first_token;
    // Children: one per distinct next byte.
    std::vector<std::pair<size_t, size_t>> groups;
    while (i < hi) {
      const char b = pieces[static_cast<size_t>(order[i])][depth];
      size_t j = i;
      while (j < hi && pieces[static_cast<size_t>(order[j])][depth] == b) ++j;
      groups.emplace_back(i, j);
      i = j;
    }
    const uint32_t first_edge = static_cast<uint32_t>(edges_.size());
    nodes_[node].first_edge = first_edge;
    nodes_[node].n_edges = static_cast<uint32_t>(groups.size());
    for (const auto& g : groups) {
      nodes_.emplace_back();
      edges_.push_back(Edge{static_cast<uint8_t>(pieces[static_cast<size_t>(order[g.first])][depth]),
                            static_cast<uint32_t>(nodes_.size() - 1)});
    }
    for (size_t k = 0; k < groups.size(); ++k)
      build(edges_[first_edge + k].child, groups[k].first, groups[k].second, depth + 1);
  };
  build(0, 0, order.size(), 0);
}

std::shared_ptr<const VocabTrie> VocabTrie::of(const tokenizer::Tokenizer& tokenizer) {
  std::vector<std::string> pieces(static_cast<size_t>(tokenizer.n_vocab()));
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id)
    if (!tokenizer.is_eog(id)) pieces[static_cast<size_t>(id)] = tokenizer.token_to_piece(id, false);
  // Cached by content (not by the tokenizer's address, which a later tokenizer may reuse).
  static std::mutex mutex;
  static std::map<std::vector<std::string>, std::shared_ptr<const VocabTrie>> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find(pieces);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 4) cache.clear();
  auto trie = std::make_shared<const VocabTrie>(pieces);
  cache.emplace(std::move(pieces), trie);
  return trie;
}

}  // namespace baton::grammar
