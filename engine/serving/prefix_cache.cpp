#include "engine/serving/prefix_cache.h"

#include <algorithm>

#include "engine/runtime/prompt_pieces.h"

namespace baton::serving {

std::optional<PrefixCache::Hit> PrefixCache::take(std::span<const int32_t> prompt, size_t n_batch) {
  size_t best = 0, best_start = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const auto& tokens = entries_[i].tokens;
    const size_t n = std::min(tokens.size(), prompt.size());
    const size_t shared = static_cast<size_t>(
        std::mismatch(tokens.begin(), tokens.begin() + static_cast<ptrdiff_t>(n), prompt.begin()).first -
        tokens.begin());
    const size_t start = prefix_reuse_start(prompt.size(), shared, n_batch);
    if (start > best_start) best = i, best_start = start;
  }
  if (best_start == 0) return std::nullopt;
  Hit hit{entries_[best].seq_id, best_start};
  entries_.erase(entries_.begin() + static_cast<ptrdiff_t>(best));
  return hit;
}

void PrefixCache::put(uint64_t seq_id, std::vector<int32_t> tokens) {
  entries_.push_back(Entry{seq_id, std::move(tokens), ++clock_});
}

std::optional<uint64_t> PrefixCache::evict_oldest() {
  if (entries_.empty()) return std::nullopt;
  auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                 [](const Entry& a, const Entry& b) { return a.stored < b.stored; });
  const uint64_t id = oldest->seq_id;
  entries_.erase(oldest);
  return id;
}

std::vector<uint64_t> PrefixCache::clear() {
  std::vector<uint64_t> ids;
  for (const auto& e : entries_) ids.push_back(e.seq_id);
  entries_.clear();
  return ids;
}

size_t PrefixCache::tokens() const {
  size_t n = 0;
  for (const auto& e : entries_) n += e.tokens.size();
  return n;
}

}  // namespace baton::serving
