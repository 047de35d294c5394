// Hyper-parameters of a transformer, read from GGUF keys ({arch}.embedding_length, …) with
// llama.cpp's defaults where a key is optional. A missing required key or an unsupported
// architecture throws baton::Error naming it.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/gguf_metadata.h"
#include "kernels/ops/ops_rope.h"

namespace baton {

// The context length when none is asked for: the model's trained length, capped at this
// (llama.cpp's default -c). The one place the default lives: effective_n_ctx() and the tools' help.
inline constexpr int64_t kDefaultContextCap = 4096;

enum class Arch { kLlama, kQwen2, kQwen3 };
using kernels::RopeLayout;  // adjacent pairs (llama) | two halves (qwen)

struct ModelConfig {
  Arch arch = Arch::kLlama;
  std::string arch_name;  // general.architecture as written in the file
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;  // attention.key_length, default n_embd / n_head
  int64_t n_ff = 0;
  int64_t n_vocab = 0;  // from the tokenizer or token_embd
  int64_t n_ctx_train = 0;
  int64_t n_rot = 0;  // rope.dimension_count, default head_dim
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;  // 1 / rope.scaling.factor for linear scaling
  RopeLayout rope_layout = RopeLayout::kNormal;
  float rms_eps = 1e-5f;

  int64_t q_dim() const { return n_head * head_dim; }      // width of the q projection
  int64_t kv_dim() const { return n_head_kv * head_dim; }  // width of k and v projections
  int64_t gqa_group() const { return n_head / n_head_kv; }

  static ModelConfig from_metadata(const gguf::Metadata& meta);
};

std::string_view arch_name(Arch arch);

}  // namespace baton
