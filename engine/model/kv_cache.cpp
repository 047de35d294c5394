#include "engine/model/kv_cache.h"

#include "engine/base/error.h"

namespace baton {

KvCache::KvCache(int64_t n_layers, int64_t kv_dim, int64_t n_ctx, int max_sequences)
    : n_layers_(n_layers), kv_dim_(kv_dim), n_ctx_(n_ctx), slots_(static_cast<size_t>(max_sequences)) {
  if (max_sequences <= 0) fail("KV cache needs at least one sequence slot (got {})", max_sequences);
  for (int i = max_sequences - 1; i >= 0; --i) free_slots_.push_back(i);
}

size_t KvCache::bytes_per_sequence() const {
  return static_cast<size_t>(n_layers_) * 2 * static_cast<size_t>(n_ctx_) * static_cast<size_t>(kv_dim_) * 2;
}

size_t KvCache::allocated_bytes() const {
  size_t total = 0;
  for (const auto& s : slots_) total += s.size();
  return total;
}

int KvCache::acquire(uint64_t seq_id) {
  if (auto it = slot_of_.find(seq_id); it != slot_of_.end()) return it->second;
  if (free_slots_.empty())
    fail("KV cache is full: all {} sequence slots are in use (sequence {} refused)", slots_.size(), seq_id);
  int slot = free_slots_.back();
  free_slots_.pop_back();
  slots_[slot].resize(bytes_per_sequence());
  slot_of_.emplace(seq_id, slot);
  return slot;
}

void KvCache::release(uint64_t seq_id) {
  auto it = slot_of_.find(seq_id);
  if (it == slot_of_.end()) return;
  free_slots_.push_back(it->second);
  slot_of_.erase(it);
}

void KvCache::release_all() {
  for (auto& [seq, slot] : slot_of_) free_slots_.push_back(slot);
  slot_of_.clear();
}

}  // namespace baton
