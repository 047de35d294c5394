#include "engine/model/stage.h"

#include <algorithm>
#include <cmath>

#include "engine/base/error.h"
#include "kernels/attention/attention.h"
#include "kernels/ops/ops.h"

namespace baton {

namespace {

// rows[i] = how many entries of seq_ids equal seq_ids[i].
void count_rows_per_sequence(const std::vector<uint64_t>& seq_ids, std::vector<int64_t>& rows) {
  std::vector<std::pair<uint64_t, int64_t>> counts;
  for (uint64_t s : seq_ids) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == s; });
    if (it == counts.end()) counts.push_back({s, 1});
    else ++it->second;
  }
  rows.resize(seq_ids.size());
  for (size_t i = 0; i < seq_ids.size(); ++i)
    rows[i] = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == seq_ids[i]; })->second;
}

}  // namespace

// Each row's matmul order and attention mode: the batch's hints (a coordinator's cut of a
// prompt), or derived from how many rows of its sequence share the pass.
void Stage::apply_row_hints(const TokenBatch& batch) {
  const size_t n = batch.size();
  tiled_.resize(n);
  if (batch.hints.empty()) {
    count_rows_per_sequence(batch.seq_ids, seq_rows_);
    kernels::row_orders(batch.seq_ids, orders_);
    for (size_t t = 0; t < n; ++t) tiled_[t] = seq_rows_[t] >= kernels::kAttentionTiledMinRows;
    return;
  }
  if (batch.hints.size() != n) fail("the batch has {} row hints for {} tokens", batch.hints.size(), n);
  orders_.resize(n);
  for (size_t t = 0; t < n; ++t) {
    const RowHint h = RowHint::decode(batch.hints[t]);
    orders_[t] = h.order;
    tiled_[t] = h.tiled;
  }
}

int64_t effective_n_ctx(const ModelConfig& config, int64_t requested) {
  if (requested > 0) return requested;
  return std::min<int64_t>(config.n_ctx_train, kDefaultContextCap);
}

Stage::Stage(std::shared_ptr<const gguf::GgufFile> file, const ModelConfig& config, int64_t first, int64_t last,
             const StageOptions& options, kernels::ThreadPool& pool)
    : file_(std::move(file)),
      config_(config),
      first_(first),
      last_(last),
      layers_(bind_layers(*file_, config, first, last, options.placement)),
      rope_freqs_(load_rope_freqs(*file_, config)),
      cache_(last - first, config.kv_dim(), effective_n_ctx(config, options.n_ctx), options.max_sequences),
      pool_(pool),
      matmul_(pool) {
  for (const auto& w : layers_)
    for (const Matrix* m : {&w.wq, &w.wk, &w.wv, &w.wo, &w.w_gate, &w.w_up, &w.w_down})
      weight_bytes_ += m->row_bytes * static_cast<size_t>(m->n_rows);
  rope_.layout = config_.rope_layout;
  rope_.n_rot = static_cast<int>(config_.n_rot);
  rope_.freq_base = config_.rope_freq_base;
  rope_.freq_scale = config_.rope_freq_scale;
  rope_.n_ctx_orig = static_cast<int>(config_.n_ctx_train);
  rope_.freq_factors = rope_freqs_.empty() ? nullptr : rope_freqs_.data();
  attn_shape_.n_head = config_.n_head;
  attn_shape_.n_head_kv = config_.n_head_kv;
  attn_shape_.head_dim = config_.head_dim;
  attn_shape_.kv_stride = static_cast<size_t>(config_.kv_dim());
  attn_shape_.scale = 1.0f / std::sqrt(static_cast<float>(config_.head_dim));
}

// Runs fn(t) for t = 0..n-1 (per-token row ops), split over the pool when there are several
// tokens: each token's result is computed alone, so the split changes no bits.
template <class Fn>
void Stage::for_tokens(int64_t n, Fn&& fn) {
  if (n < 2) {
    for (int64_t t = 0; t < n; ++t) fn(t);
    return;
  }
  pool_.run(
      [&](int ith, int nth) {
        for (int64_t t = ith; t < n; t += nth) fn(t);
      },
      static_cast<int>(std::min<int64_t>(n, pool_.n_threads())));
}

// xb_ rows = RMSNorm(hidden rows) * weight, per token.
void Stage::norm_rows(int64_t n, const float* hidden, const std::vector<float>& weight) {
  const int64_t n_embd = config_.n_embd;
  for_tokens(n, [&](int64_t t) {
    kernels::rms_norm(hidden + t * n_embd, weight.data(), xb_.data() + t * n_embd, n_embd, config_.rms_eps);
  });
}

// hidden rows += proj_ rows.
void Stage::add_residual(int64_t n, float* hidden) {
  const int64_t n_embd = config_.n_embd;
  for_tokens(
      n, [&](int64_t t) { kernels::add(hidden + t * n_embd, proj_.data() + t * n_embd, hidden + t * n_embd, n_embd); });
}

void Stage::ensure_scratch(int64_t n) {
  if (n <= scratch_tokens_) return;
  const auto& c = config_;
  xb_.resize(n * c.n_embd);
  q_.resize(n * c.q_dim());
  k_.resize(n * c.kv_dim());
  v_.resize(n * c.kv_dim());
  att_.resize(n * c.q_dim());
  proj_.resize(n * c.n_embd);
  gate_.resize(n * c.n_ff);
  up_.resize(n * c.n_ff);
  scratch_tokens_ = n;
}

void Stage::forward(const TokenBatch& batch, float* hidden) {
  const int64_t n = static_cast<int64_t>(batch.size());
  if (n == 0) return;
  for (int64_t t = 0; t < n; ++t)
    if (batch.positions[t] < 0 || batch.positions[t] >= cache_.n_ctx())
      fail("token {} of sequence {} is at position {}, outside the context of {} positions", t, batch.seq_ids[t],
           batch.positions[t], cache_.n_ctx());
  // Claim cache slots first so that a full cache changes nothing.
  std::vector<int> slots(static_cast<size_t>(n));
  std::vector<uint64_t> claimed;
  try {
    for (int64_t t = 0; t < n; ++t) {
      if (!cache_.holds(batch.seq_ids[t])) claimed.push_back(batch.seq_ids[t]);
      slots[t] = cache_.acquire(batch.seq_ids[t]);
    }
  } catch (...) {
    for (uint64_t s : claimed) cache_.release(s);
    throw;
  }
  ensure_scratch(n);
  apply_row_hints(batch);
  const bool holds_last_layer = last_ == config_.n_layer;
  for (size_t il = 0; il < layers_.size(); ++il) {
    attention_block(layers_[il], static_cast<int64_t>(il), batch, slots, hidden);
    if (holds_last_layer && il + 1 == layers_.size()) last_ffn_block(layers_[il], batch, hidden);
    else ffn_block(layers_[il], n, hidden, orders_);
  }
}

void Stage::last_ffn_block(const LayerWeights& w, const TokenBatch& batch, float* hidden) {
  const int64_t n = static_cast<int64_t>(batch.size()), n_embd = config_.n_embd;
  const int64_t n_out = static_cast<int64_t>(batch.n_outputs());
  if (n_out == 0) return;
  // The output rows' own count per sequence decides their order. With hints, every row follows
  // a reference run in which it is its sequence's only output row of its pass (a prompt's last
  // row, a generated token, a speculative draft's row): the single-row order.
  if (!batch.hints.empty()) {
    out_orders_.assign(static_cast<size_t>(n_out), kernels::RowOrder::kSingle);
  } else {
    std::vector<uint64_t> out_seqs;
    out_seqs.reserve(static_cast<size_t>(n_out));
    for (int64_t t = 0; t < n; ++t)
      if (batch.output[t]) out_seqs.push_back(batch.seq_ids[t]);
    kernels::row_orders(out_seqs, out_orders_);
  }
  if (n_out == n) return ffn_block(w, n, hidden, out_orders_);
  out_hidden_.resize(static_cast<size_t>(n_out * n_embd));
  for (int64_t t = 0, r = 0; t < n; ++t)
    if (batch.output[t]) std::copy_n(hidden + t * n_embd, n_embd, out_hidden_.data() + (r++) * n_embd);
  ffn_block(w, n_out, out_hidden_.data(), out_orders_);
  for (int64_t t = 0, r = 0; t < n; ++t)
    if (batch.output[t]) std::copy_n(out_hidden_.data() + (r++) * n_embd, n_embd, hidden + t * n_embd);
}

void Stage::attention_block(const LayerWeights& w, int64_t il, const TokenBatch& batch, const std::vector<int>& slots,
                            float* hidden) {
  const auto& c = config_;
  const int64_t n = static_cast<int64_t>(batch.size());
  const int64_t n_embd = c.n_embd, q_dim = c.q_dim(), kv_dim = c.kv_dim();

  norm_rows(n, hidden, w.attn_norm);

  // q, k, v projections (one pass over the input)
  const kernels::MatmulTarget qkv[3] = {
      {w.wq, q_.data(), static_cast<size_t>(q_dim), nullptr},
      {w.wk, k_.data(), static_cast<size_t>(kv_dim), nullptr},
      {w.wv, v_.data(), static_cast<size_t>(kv_dim), nullptr},
  };
  matmul_.matmul(qkv, xb_.data(), static_cast<size_t>(n_embd), n, orders_);
  if (!w.bq.empty())
    for (int64_t t = 0; t < n; ++t) {
      kernels::add(q_.data() + t * q_dim, w.bq.data(), q_.data() + t * q_dim, q_dim);
      kernels::add(k_.data() + t * kv_dim, w.bk.data(), k_.data() + t * kv_dim, kv_dim);
      kernels::add(v_.data() + t * kv_dim, w.bv.data(), v_.data() + t * kv_dim, kv_dim);
    }

  // per-head q/k norms (qwen3)
  if (!w.q_norm.empty()) {
    for (int64_t r = 0; r < n * c.n_head; ++r)
      kernels::rms_norm(q_.data() + r * c.head_dim, w.q_norm.data(), q_.data() + r * c.head_dim, c.head_dim, c.rms_eps);
    for (int64_t r = 0; r < n * c.n_head_kv; ++r)
      kernels::rms_norm(k_.data() + r * c.head_dim, w.k_norm.data(), k_.data() + r * c.head_dim, c.head_dim, c.rms_eps);
  }

  // rope
  kernels::rope(rope_, batch.positions, q_.data(), c.n_head, c.head_dim, static_cast<size_t>(q_dim));
  kernels::rope(rope_, batch.positions, k_.data(), c.n_head_kv, c.head_dim, static_cast<size_t>(kv_dim));

  // store k and v in the cache (f16)
  for_tokens(n, [&](int64_t t) {
    kernels::f32_to_f16(k_.data() + t * kv_dim, cache_.k_row(slots[t], il, batch.positions[t]), kv_dim);
    kernels::f32_to_f16(v_.data() + t * kv_dim, cache_.v_row(slots[t], il, batch.positions[t]), kv_dim);
  });

  // causal attention over each token's own sequence
  attn_queries_.resize(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) {
    auto& query = attn_queries_[t];
    query.q = q_.data() + t * q_dim;
    query.k = cache_.k_rows(slots[t], il);
    query.v = cache_.v_rows(slots[t], il);
    query.n_kv = batch.positions[t] + 1;
    query.out = att_.data() + t * q_dim;
    query.tiled = tiled_[t] != 0;
  }
  kernels::attention(pool_, attn_shape_, attn_queries_);

  // output projection and residual
  matmul_.matmul(w.wo, att_.data(), n, proj_.data(), orders_);
  add_residual(n, hidden);
}

void Stage::ffn_block(const LayerWeights& w, int64_t n, float* hidden, std::span<const kernels::RowOrder> orders) {
  const auto& c = config_;
  const int64_t n_embd = c.n_embd, n_ff = c.n_ff;

  norm_rows(n, hidden, w.ffn_norm);

  // gate and up projections, SwiGLU, down projection
  const kernels::MatmulTarget gate_up[2] = {
      {w.w_gate, gate_.data(), static_cast<size_t>(n_ff), nullptr},
      {w.w_up, up_.data(), static_cast<size_t>(n_ff), nullptr},
  };
  matmul_.matmul(gate_up, xb_.data(), static_cast<size_t>(n_embd), n, orders);
  // per row, as ggml does: the SIMD groups (and the libm tail) restart at every token, so a
  // token's result does not depend on the rows before it (batch invariance)
  for_tokens(n, [&](int64_t t) {
    kernels::swiglu(gate_.data() + t * n_ff, up_.data() + t * n_ff, gate_.data() + t * n_ff, n_ff);
  });
  matmul_.matmul(w.w_down, gate_.data(), n, proj_.data(), orders);

  add_residual(n, hidden);
}

}  // namespace baton
