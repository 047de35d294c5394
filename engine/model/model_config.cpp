#include "engine/model/model_config.h"

#include <fmt/format.h>

#include "engine/base/error.h"
#include "kernels/attention/attention.h"
#include "kernels/ops/ops_rope.h"

namespace baton {
namespace {

Arch parse_arch(const std::string& name) {
  if (name == "llama") return Arch::kLlama;
  if (name == "qwen2") return Arch::kQwen2;
  if (name == "qwen3") return Arch::kQwen3;
  fail<UnsupportedError>("unsupported architecture '{}' (general.architecture); supported: llama, qwen2, qwen3", name);
}

int64_t positive(const gguf::Metadata& meta, const std::string& key, uint64_t value) {
  if (value == 0 || value > (1ull << 31))
    fail("metadata key {}: value {} is out of range (expected 1 .. 2^31)", key, value);
  (void)meta;
  return static_cast<int64_t>(value);
}

}  // namespace

std::string_view arch_name(Arch arch) {
  switch (arch) {
    case Arch::kLlama: return "llama";
    case Arch::kQwen2: return "qwen2";
    case Arch::kQwen3: return "qwen3";
  }
  return "unknown";
}

ModelConfig ModelConfig::from_metadata(const gguf::Metadata& meta) {
  ModelConfig c;
  c.arch_name = meta.require_string("general.architecture");
  c.arch = parse_arch(c.arch_name);
  const std::string p = c.arch_name + ".";
  auto req = [&](const char* suffix) { return positive(meta, p + suffix, meta.require_uint(p + suffix)); };
  auto opt = [&](const char* suffix, int64_t fallback) {
    auto v = meta.find_uint(p + suffix);
    return v ? positive(meta, p + suffix, *v) : fallback;
  };

  c.n_embd = req("embedding_length");
  c.n_layer = req("block_count");
  c.n_head = req("attention.head_count");
  c.n_head_kv = opt("attention.head_count_kv", c.n_head);
  c.n_ff = req("feed_forward_length");
  c.n_ctx_train = opt("context_length", 2048);
  if (c.n_embd % c.n_head != 0 && !meta.contains(p + "attention.key_length"))
    fail("{}attention.key_length is missing and n_embd {} is not divisible by n_head {}", p, c.n_embd, c.n_head);
  c.head_dim = opt("attention.key_length", c.n_embd / c.n_head);
  if (auto v = meta.find_uint(p + "attention.value_length"); v && static_cast<int64_t>(*v) != c.head_dim)
    fail<UnsupportedError>("{}attention.value_length {} differs from key_length {}: not supported", p, *v, c.head_dim);
  c.n_rot = opt("rope.dimension_count", c.head_dim);
  if (c.n_head % c.n_head_kv != 0)
    fail("n_head {} is not a multiple of n_head_kv {} ({}attention.head_count_kv)", c.n_head, c.n_head_kv, p);
  if (c.n_rot > c.head_dim || c.n_rot % 2 != 0)
    fail("{}rope.dimension_count {} must be even and at most head_dim {}", p, c.n_rot, c.head_dim);
  // The kernels' fixed buffers (kernels never check user data: this is where it is refused).
  if (c.head_dim > kernels::AttentionShape::kMaxHeadDim)
    fail<UnsupportedError>("{}attention.key_length {} is over the {} this build supports", p, c.head_dim,
                           kernels::AttentionShape::kMaxHeadDim);
  if (c.n_rot > kernels::RopeConfig::kMaxRot)
    fail<UnsupportedError>("{}rope.dimension_count {} is over the {} this build supports", p, c.n_rot,
                           kernels::RopeConfig::kMaxRot);

  if (auto v = meta.find_float(p + "rope.freq_base")) c.rope_freq_base = static_cast<float>(*v);
  if (auto type = meta.find_string(p + "rope.scaling.type"); type && *type == "linear") {
    if (auto f = meta.find_float(p + "rope.scaling.factor"); f && *f > 0)
      c.rope_freq_scale = 1.0f / static_cast<float>(*f);
  } else if (type && *type != "none" && *type != "llama3" && *type != "yarn") {
    fail<UnsupportedError>("{}rope.scaling.type '{}' is not supported", p, *type);
  } else if (type && *type == "yarn") {
    fail<UnsupportedError>("{}rope.scaling.type 'yarn' is not supported yet", p);
  }
  if (auto v = meta.find_float(p + "attention.layer_norm_rms_epsilon")) c.rms_eps = static_cast<float>(*v);
  c.rope_layout = c.arch == Arch::kLlama ? RopeLayout::kNormal : RopeLayout::kNeox;

  if (auto v = meta.find_uint(p + "vocab_size")) c.n_vocab = static_cast<int64_t>(*v);
  else if (auto tokens = meta.find_string_array("tokenizer.ggml.tokens"))
    c.n_vocab = static_cast<int64_t>(tokens->size());
  return c;
}

}  // namespace baton
