// F16 key/value cache of one stage's layers, for many sequences. A sequence id (chosen by
// the coordinator) is mapped to a slot on first use; each slot holds n_ctx positions of every
// local layer: K and V rows of kv_dim halves, laid out [pos][n_head_kv][head_dim].
// Memory of a slot is allocated when the slot is first used and reused after release.
// Not thread-safe: the stage that owns it serialises access.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "engine/base/aligned_buffer.h"

namespace baton {

class KvCache {
 public:
  KvCache(int64_t n_layers, int64_t kv_dim, int64_t n_ctx, int max_sequences);

  // The slot of `seq_id`, assigning a free one if needed; throws baton::Error when all
  // max_sequences slots are taken.
  int acquire(uint64_t seq_id);
  // Frees the slot of `seq_id` (no-op for an unknown id).
  void release(uint64_t seq_id);
  void release_all();
  bool holds(uint64_t seq_id) const { return slot_of_.count(seq_id) != 0; }
  int n_active() const { return static_cast<int>(slot_of_.size()); }

  uint16_t* k_row(int slot, int64_t layer, int64_t pos) { return base(slot, layer, 0) + pos * kv_dim_; }
  uint16_t* v_row(int slot, int64_t layer, int64_t pos) { return base(slot, layer, 1) + pos * kv_dim_; }
  const uint16_t* k_rows(int slot, int64_t layer) { return base(slot, layer, 0); }
  const uint16_t* v_rows(int slot, int64_t layer) { return base(slot, layer, 1); }

  int64_t n_ctx() const { return n_ctx_; }
  int64_t kv_dim() const { return kv_dim_; }
  int max_sequences() const { return static_cast<int>(slots_.size()); }
  size_t bytes_per_sequence() const;
  size_t allocated_bytes() const;

 private:
  uint16_t* base(int slot, int64_t layer, int which) {
    return slots_[slot].as<uint16_t>() + (layer * 2 + which) * n_ctx_ * kv_dim_;
  }

  int64_t n_layers_, kv_dim_, n_ctx_;
  std::vector<AlignedBuffer> slots_;
  std::vector<int> free_slots_;
  std::unordered_map<uint64_t, int> slot_of_;
};

}  // namespace baton
