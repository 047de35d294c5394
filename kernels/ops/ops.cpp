// Entry points of the row ops (dispatch on active_isa()), the shared GELU table and RoPE's
// angle cache (libm cosf/sinf, identical for every ISA).
#include <cmath>
#include <numbers>

#include "engine/base/fp16.h"
#include "kernels/ops/ops_internal.h"
#include "kernels/ops/ops_rope.h"

namespace baton::kernels {

const OpsTable& ops_table(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return avx512::kOpsTable;
    case Isa::kAvx2:
    case Isa::kAvxVnni: return avx2::kOpsTable;  // float row ops: nothing for VNNI to do
    case Isa::kScalar: break;
  }
  return scalar::kOpsTable;
}

const OpsTable& active_ops() {
  static const OpsTable& table = ops_table(active_isa());
  return table;
}

void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  active_ops().rms_norm(x, weight, y, n, eps);
}
void softmax(const float* x, float* y, int64_t n) { active_ops().softmax(x, y, n); }
void silu(const float* x, float* y, int64_t n) { active_ops().silu(x, y, n); }
void swiglu(const float* gate, const float* up, float* y, int64_t n) { active_ops().swiglu(gate, up, y, n); }
void gelu(const float* x, float* y, int64_t n) { active_ops().gelu(x, y, n); }
void add(const float* a, const float* b, float* y, int64_t n) { active_ops().add(a, b, y, n); }
void mul(const float* a, const float* b, float* y, int64_t n) { active_ops().mul(a, b, y, n); }
void scale(const float* x, float s, float* y, int64_t n) { active_ops().scale(x, s, y, n); }
void f32_to_f16(const float* x, uint16_t* y, int64_t n) { active_ops().f32_to_f16(x, y, n); }
void f16_to_f32(const uint16_t* x, float* y, int64_t n) { active_ops().f16_to_f32(x, y, n); }

namespace detail {

const uint16_t* gelu_f16_table() {
  static const auto* table = [] {
    constexpr float kCoefA = 0.044715f;
    constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
    auto* t = new uint16_t[1 << 16];
    for (uint32_t h = 0; h < (1u << 16); ++h) {
      const float x = fp16_to_fp32(static_cast<uint16_t>(h));
      t[h] = fp32_to_fp16(0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoefA * x * x))));
    }
    return t;
  }();
  return table;
}

void gelu_by_table(const float* x, float* y, int64_t n) {
  const uint16_t* table = gelu_f16_table();
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (v <= -10.0f) y[i] = 0.0f;
    else if (v >= 10.0f) y[i] = v;
    else y[i] = fp16_to_fp32(table[fp32_to_fp16(v)]);
  }
}

}  // namespace detail

// ---- RoPE ----

namespace {

float yarn_corr_dim(int n_rot, int n_ctx_orig, float beta, float base) {
  return static_cast<float>(n_rot) *
         std::log(static_cast<float>(n_ctx_orig) / (beta * 2.0f * std::numbers::pi_v<float>)) / (2.0f * std::log(base));
}

float yarn_ramp(float low, float high, int64_t i0) {
  const float y = (static_cast<float>(i0 / 2) - low) / std::fmax(0.001f, high - low);
  return 1.0f - std::fmin(1.0f, std::fmax(0.0f, y));
}

}  // namespace

void rope_yarn_corr_dims(int n_rot, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow, float dims[2]) {
  const float start = std::floor(yarn_corr_dim(n_rot, n_ctx_orig, beta_fast, freq_base));
  const float end = std::ceil(yarn_corr_dim(n_rot, n_ctx_orig, beta_slow, freq_base));
  dims[0] = std::fmax(0.0f, start);
  dims[1] = std::fmin(static_cast<float>(n_rot - 1), end);
}

void rope_cache(const RopeConfig& cfg, int64_t pos, float* cache) {
  BATON_KERNEL_CHECK(cfg.n_rot > 0 && cfg.n_rot % 2 == 0 && cfg.n_rot <= RopeConfig::kMaxRot);
  const int64_t half = cfg.n_rot / 2;
  const float theta_scale = std::pow(cfg.freq_base, -2.0f / static_cast<float>(cfg.n_rot));
  float corr_dims[2] = {0, 0};
  float mscale = cfg.attn_factor;
  if (cfg.ext_factor != 0.0f) {
    rope_yarn_corr_dims(cfg.n_rot, cfg.n_ctx_orig, cfg.freq_base, cfg.beta_fast, cfg.beta_slow, corr_dims);
    mscale *= 1.0f + 0.1f * std::log(1.0f / cfg.freq_scale);
  }
  float theta = static_cast<float>(pos);
  for (int64_t i = 0; i < half; ++i) {
    const float extrap = cfg.freq_factors ? theta / cfg.freq_factors[i] : theta;
    const float interp = cfg.freq_scale * extrap;
    float t = interp;
    if (cfg.ext_factor != 0.0f) {
      const float mix = yarn_ramp(corr_dims[0], corr_dims[1], 2 * i) * cfg.ext_factor;
      t = interp * (1 - mix) + extrap * mix;
    }
    cache[i] = std::cos(t) * mscale;
    cache[half + i] = std::sin(t) * mscale;
    theta *= theta_scale;
  }
}

void rope_apply(const RopeConfig& cfg, const float* cache, float* x, int64_t n_head, int64_t head_dim) {
  BATON_KERNEL_CHECK(cfg.n_rot > 0 && cfg.n_rot % 2 == 0 && cfg.n_rot <= head_dim);
  const OpsTable& ops = active_ops();
  const bool neox = cfg.layout == RopeLayout::kNeox;
  for (int64_t h = 0; h < n_head; ++h) ops.rope_rotate(cache, x + h * head_dim, cfg.n_rot, neox);
}

void rope(const RopeConfig& cfg, std::span<const int32_t> pos, float* x, int64_t n_head, int64_t head_dim,
          size_t token_stride) {
  float cache[RopeConfig::kMaxRot];
  for (size_t t = 0; t < pos.size(); ++t) {
    rope_cache(cfg, pos[t], cache);
    rope_apply(cfg, cache, x + t * token_stride, n_head, head_dim);
  }
}

}  // namespace baton::kernels
