// Which sequences' KV caches the runner still holds for reuse (like llama-server's
// cache_prompt): a finished request leaves its KV where it is (on every stage, under its
// sequence id) and this index records the tokens whose KV can be reused bit for bit
// (engine/runtime/prompt_pieces.h, reusable_prefix). A new request whose prompt starts with
// such tokens takes over that sequence id and computes only the rest; nothing is copied and
// nothing crosses the wire (KV rows are positional: a pass writes its positions' rows before
// its attention reads positions 0..pos, so rows past a sequence's new length are never read).
//
// The coordinator is the one place that knows what the stages hold: entries occupy KV slots
// the runner reserved for the scheduler's sequences, the least recently used goes first when a
// slot is needed, and everything is forgotten when the runner loses its caches (a failover, a
// re-plan). Owned and used by the scheduler thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace baton::serving {

class PrefixCache {
 public:
  struct Hit {
    uint64_t seq_id = 0;  // the sequence whose KV the request takes over
    size_t start = 0;     // positions [0, start) are reused; > 0
  };

  // The entry that lets `prompt` skip the most positions (prefix_reuse_start with n_batch),
  // removed from the index; nullopt when none lets it skip any.
  std::optional<Hit> take(std::span<const int32_t> prompt, size_t n_batch);
  // Records that sequence `seq_id` holds the KV of `tokens` (its reusable prefix; not empty).
  void put(uint64_t seq_id, std::vector<int32_t> tokens);
  // Removes the least recently stored entry and returns its sequence id (to be reset on the
  // runner); nullopt when empty.
  std::optional<uint64_t> evict_oldest();
  // Forgets every entry (the runner lost them); returns their ids.
  std::vector<uint64_t> clear();

  size_t size() const { return entries_.size(); }
  size_t tokens() const;  // positions held, all entries

 private:
  struct Entry {
    uint64_t seq_id;
    std::vector<int32_t> tokens;
    uint64_t stored;  // put() order: the smallest is the least recently used
  };
  std::vector<Entry> entries_;  // a few (at most the scheduler's slots)
  uint64_t clock_ = 0;
};

}  // namespace baton::serving
