// Views of a model's tensors inside the memory-mapped GGUF, bound by their GGUF names and
// checked against the model config. Matrices stay in the file's type (zero copy); 1-D tensors
// (norms, biases) are converted once to owned f32.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/model/weight_arena.h"
#include "gguf/gguf_file.h"
#include "kernels/core/matmul.h"

namespace baton {

// A weight matrix [n_rows, k] (GGUF ne = [k, n_rows]) in its stored type.
using Matrix = kernels::WeightView;

struct LayerWeights {
  std::vector<float> attn_norm;       // [n_embd]
  Matrix wq, wk, wv, wo;              // [q_dim, n_embd] [kv_dim, n_embd] x2, [n_embd, q_dim]
  std::vector<float> bq, bk, bv;      // qwen2 only: [q_dim] [kv_dim] [kv_dim]
  std::vector<float> q_norm, k_norm;  // qwen3 only: [head_dim]
  std::vector<float> ffn_norm;        // [n_embd]
  Matrix w_gate, w_up, w_down;        // [n_ff, n_embd] x2, [n_embd, n_ff]
  // The memory of matrices copied out of the mmap at load (shared by the layers of one
  // bind_layers call); null when they are views into the mmap.
  std::shared_ptr<const WeightArena> storage;
};

// How bind_layers places the layer matrices.
enum class WeightPlacement {
  kMapped,    // views into the mmap (zero copy)
  kResident,  // copied, tensor by tensor, into one WeightArena (huge pages) and their mmap pages
              // released, so resident memory stays about the layers' size; matrices whose type
              // has a load-time layout for the active ISA (TypeOps::repack: Q4_0 on AVX2/AVX-512)
              // are repacked on the way. Results are the same bits as kMapped.
};

// Binds blk.{il}.* for il in [first, last) and places the matrices. Throws baton::Error naming a
// missing or misshapen tensor.
std::vector<LayerWeights> bind_layers(const gguf::GgufFile& file, const ModelConfig& config, int64_t first,
                                      int64_t last, WeightPlacement placement = WeightPlacement::kResident);

struct HeadWeights {
  Matrix token_embd;                           // [n_vocab, n_embd]
  std::vector<float> output_norm;              // [n_embd]
  Matrix output;                               // [n_vocab, n_embd]; token_embd when tied
  std::vector<float> rope_freqs;               // [n_rot / 2] llama3-style frequency factors, or empty
  std::shared_ptr<const WeightArena> storage;  // output's memory when placed kResident (untied)
};

// kResident: an untied output matrix is placed like the layer matrices (the embedding table
// stays in the mmap: get_rows reads a few rows of it per token).
HeadWeights bind_head(const gguf::GgufFile& file, const ModelConfig& config,
                      WeightPlacement placement = WeightPlacement::kResident);
// Only rope_freqs.weight (needed by every stage); empty when absent.
std::vector<float> load_rope_freqs(const gguf::GgufFile& file, const ModelConfig& config);

}  // namespace baton
