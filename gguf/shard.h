// Layer-range shards of a model: which layers a file holds, and cutting a shard file that
// holds blk.A..blk.B (plus optionally the embeddings and the output head) with all the
// source's metadata. A shard records its range in baton.shard.first_layer/last_layer and the
// source model's identity (see model_identity.h). Layer ranges here are INCLUSIVE: "0-1" is
// layers 0 and 1.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.h"

namespace baton::gguf {

inline constexpr std::string_view kShardFirstLayerKey = "baton.shard.first_layer";
inline constexpr std::string_view kShardLastLayerKey = "baton.shard.last_layer";
inline constexpr std::string_view kShardSourceNameKey = "baton.shard.source_name";

struct HeldLayers {
  uint32_t n_layer = 0;  // the whole model's {arch}.block_count
  uint32_t first = 0;    // first held layer
  uint32_t last = 0;     // last held layer (inclusive); meaningless when n_layer == 0
  bool is_shard = false;

  // True when every layer in [first, last] (inclusive) is held.
  bool holds(uint32_t want_first, uint32_t want_last) const {
    return n_layer > 0 && want_first <= want_last && want_first >= first && want_last <= last;
  }
};

// All layers for a normal model; the recorded range for a shard. Throws FormatError when
// {arch}.block_count is missing or the shard keys are inconsistent.
HeldLayers held_layers(const GgufFile& file);

// Throws Error "shard X holds layers 0-1, asked for 2-3" (or "model X has 5 layers, asked
// for 4-7") unless the file holds every layer in [first, last].
void require_layers(const GgufFile& file, uint32_t first, uint32_t last);

// The layer index of a "blk.N.*" tensor name, or -1 for a tensor outside the blocks.
int64_t tensor_layer(std::string_view name);

struct ShardOptions {
  uint32_t first_layer = 0;      // inclusive
  uint32_t last_layer = 0;       // inclusive
  bool with_embeddings = false;  // token_embd.*, token_embd_norm.*, position_embd.*, token_types.*
  bool with_output = false;      // output.*, output_norm.*
};

// The tensors a shard keeps, in source order: blk.N.* for N in range, the optional groups, and
// every other non-block tensor (e.g. rope_freqs.weight: every layer needs it). Throws Error when
// the range is empty, past {arch}.block_count, or not held by `source` (a shard of a shard).
std::vector<const TensorInfo*> select_shard_tensors(const GgufFile& source, const ShardOptions& options);

// Writes the shard to `out_path`, streaming tensor data from the source mapping. split.* keys
// are dropped; baton.shard.* keys are set. Returns the number of tensors written.
size_t write_shard(const GgufFile& source, const ShardOptions& options, const std::string& out_path);

}  // namespace baton::gguf
