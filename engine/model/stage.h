// A pipeline stage: the transformer blocks of layers [first, last) of one model, their
// weights (views into the mmap) and the KV cache of those layers for every live sequence.
// It knows nothing about sockets: forward() maps a batch of hidden rows to the next hidden
// rows. Not thread-safe: one forward() at a time (it owns scratch and the cache).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/model/kv_cache.h"
#include "engine/model/model_config.h"
#include "engine/model/row_hint.h"
#include "engine/model/token_batch.h"
#include "engine/model/weights.h"
#include "gguf/gguf_file.h"
#include "kernels/attention/attention.h"
#include "kernels/core/matmul.h"
#include "kernels/ops/ops_rope.h"
#include "kernels/core/thread_pool.h"

namespace baton {

struct StageOptions {
  int64_t n_ctx = 0;                                       // positions per sequence; <= 0: the model's, capped at 4096
  int max_sequences = 1;                                   // KV cache slots
  WeightPlacement placement = WeightPlacement::kResident;  // see weights.h
};

class Stage {
 public:
  // Binds layers [first, last) of `file` (which must hold them); throws baton::Error naming
  // what is missing or misshapen.
  Stage(std::shared_ptr<const gguf::GgufFile> file, const ModelConfig& config, int64_t first, int64_t last,
        const StageOptions& options, kernels::ThreadPool& pool);

  // hidden: [batch.size(), n_embd], replaced by the output of the last local layer.
  // When this stage holds the model's last layer, only the rows marked `output` go through that
  // layer's FFN (as llama.cpp selects its output rows before it): the other rows come back as
  // they left the last attention block and mean nothing. Throws baton::Error for a position
  // outside the context or a full cache (nothing changed).
  //
  // Numerics (docs/NUMERICS.md): a token's summation orders depend on how many rows its own
  // sequence has in this batch and where it is among them (kernels::row_orders: llama.cpp's
  // single-row, batch or grouped matmul orders; >= kAttentionTiledMinRows rows: the tiled
  // attention mode), never on other sequences.
  void forward(const TokenBatch& batch, float* hidden);

  void reset_sequence(uint64_t seq_id) { cache_.release(seq_id); }
  void reset_all() { cache_.release_all(); }

  int64_t first_layer() const { return first_; }
  int64_t last_layer() const { return last_; }  // exclusive
  int64_t n_ctx() const { return cache_.n_ctx(); }
  const ModelConfig& config() const { return config_; }
  size_t weight_bytes() const { return weight_bytes_; }
  size_t kv_cache_bytes() const { return cache_.allocated_bytes(); }
  int active_sequences() const { return cache_.n_active(); }  // sequences holding a cache slot

 private:
  void attention_block(const LayerWeights& w, int64_t il_local, const TokenBatch& batch, const std::vector<int>& slots,
                       float* hidden);
  // orders: one per token (MatmulDriver::matmul).
  void ffn_block(const LayerWeights& w, int64_t n_tokens, float* hidden, std::span<const kernels::RowOrder> orders);
  // The model's last layer's FFN on the output rows only (see forward()).
  void last_ffn_block(const LayerWeights& w, const TokenBatch& batch, float* hidden);
  void ensure_scratch(int64_t n_tokens);
  // orders_ and tiled_ of the batch's rows (engine/model/row_hint.h).
  void apply_row_hints(const TokenBatch& batch);
  // fn(t) for every token t of a batch, split over the pool (per-token row ops only).
  template <class Fn>
  void for_tokens(int64_t n, Fn&& fn);
  void norm_rows(int64_t n, const float* hidden, const std::vector<float>& weight);  // into xb_
  void add_residual(int64_t n, float* hidden);                                       // += proj_

  std::shared_ptr<const gguf::GgufFile> file_;
  ModelConfig config_;
  int64_t first_, last_;
  std::vector<LayerWeights> layers_;
  std::vector<float> rope_freqs_;
  KvCache cache_;
  kernels::ThreadPool& pool_;
  kernels::MatmulDriver matmul_;
  size_t weight_bytes_ = 0;
  kernels::RopeConfig rope_;
  kernels::AttentionShape attn_shape_;
  std::vector<kernels::AttentionQuery> attn_queries_;
  std::vector<int64_t> seq_rows_;              // per token: rows of its sequence in this batch
  std::vector<kernels::RowOrder> orders_;      // per token (its hint, or kernels::row_orders)
  std::vector<uint8_t> tiled_;                 // per token: attention in llama.cpp's tiled mode
  std::vector<kernels::RowOrder> out_orders_;  // per output row, among the output rows
  std::vector<float> out_hidden_;              // [n_outputs, n_embd] for the last layer's FFN

  // scratch, resized on demand
  int64_t scratch_tokens_ = 0;
  std::vector<float> xb_;    // [n, n_embd]  normalised input
  std::vector<float> q_;     // [n, q_dim]
  std::vector<float> k_;     // [n, kv_dim]
  std::vector<float> v_;     // [n, kv_dim]
  std::vector<float> att_;   // [n, q_dim]   attention output
  std::vector<float> proj_;  // [n, n_embd]  block output before the residual
  std::vector<float> gate_;  // [n, n_ff]
  std::vector<float> up_;    // [n, n_ff]
};

// The context length a stage/engine uses: requested if > 0, else min(n_ctx_train, kDefaultContextCap).
int64_t effective_n_ctx(const ModelConfig& config, int64_t requested);

}  // namespace baton
