// Rotary position embedding (RoPE), computed as ggml's rope op does:
//   theta_scale = powf(freq_base, -2/n_rot); theta_0 = pos; theta_{i+1} = theta_i * theta_scale
//   (float, repeated multiplication), theta_i / freq_factors[i], then YaRN (rope_yarn:
//   freq_scale interpolation, ext_factor ramp between corr_dims, mscale) and cosf/sinf.
// Layouts: kNormal (ggml mode 0, llama) rotates adjacent pairs (2i, 2i+1); kNeox (mode 2,
// qwen2/qwen3, gpt-neox) rotates (i, i + n_rot/2). Only the first n_rot dims of a head turn.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace baton::kernels {

enum class RopeLayout { kNormal, kNeox };

struct RopeConfig {
  RopeLayout layout = RopeLayout::kNormal;
  int n_rot = 0;  // rotated dims per head: even, <= head_dim, <= kMaxRot
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;   // 1 / linear scaling factor
  float ext_factor = 0.0f;   // YaRN extrapolation mix (0: plain RoPE)
  float attn_factor = 1.0f;  // YaRN magnitude (mscale)
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  int n_ctx_orig = 0;                   // training context, for the YaRN correction dims
  const float* freq_factors = nullptr;  // [n_rot/2] divisors of theta (rope_freqs.weight), or null

  static constexpr int kMaxRot = 1024;
};

// The angles of one position: cache[i] = cos θ_i · m, cache[n_rot/2 + i] = sin θ_i · m for
// i < n_rot/2 (m = attn_factor, times YaRN's magnitude correction when ext_factor != 0).
void rope_cache(const RopeConfig& cfg, int64_t pos, float* cache);

// Rotates, in place, the first cfg.n_rot dims of n_head heads of head_dim floats each (heads
// contiguous) with a cache from rope_cache.
void rope_apply(const RopeConfig& cfg, const float* cache, float* x, int64_t n_head, int64_t head_dim);

// For n_tok = pos.size() tokens: token t's heads start at x + t * token_stride.
void rope(const RopeConfig& cfg, std::span<const int32_t> pos, float* x, int64_t n_head, int64_t head_dim,
          size_t token_stride);

// ggml_rope_yarn_corr_dims: the first and last rotated pair index of YaRN's ramp.
void rope_yarn_corr_dims(int n_rot, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow, float dims[2]);

}  // namespace baton::kernels
