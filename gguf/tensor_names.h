// The tensor names of the llama-family GGUF files this project reads and writes (llama.cpp's
// LLM_TENSOR_NAMES for llama, qwen2, qwen3): the one table the loader (engine/model/weights.cpp),
// the quantizer's rules (engine/quantize) and `engine-gguf synth` spell them from. A block's
// tensor is "blk.N." + its suffix (block_tensor_name); gguf/shard.h's tensor_layer() reads N back.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace baton::gguf::tensor_names {

// Outside the blocks.
inline constexpr std::string_view kTokenEmbd = "token_embd.weight";
inline constexpr std::string_view kOutputNorm = "output_norm.weight";
inline constexpr std::string_view kOutput = "output.weight";  // absent when tied to kTokenEmbd
inline constexpr std::string_view kRopeFreqs = "rope_freqs.weight";

// Suffixes of a block's tensors.
inline constexpr std::string_view kAttnNorm = "attn_norm.weight";
inline constexpr std::string_view kAttnQ = "attn_q.weight";
inline constexpr std::string_view kAttnK = "attn_k.weight";
inline constexpr std::string_view kAttnV = "attn_v.weight";
inline constexpr std::string_view kAttnOutput = "attn_output.weight";
inline constexpr std::string_view kAttnQkv = "attn_qkv.weight";  // fused q/k/v (not loaded here)
inline constexpr std::string_view kAttnQBias = "attn_q.bias";    // qwen2 (optional elsewhere)
inline constexpr std::string_view kAttnKBias = "attn_k.bias";
inline constexpr std::string_view kAttnVBias = "attn_v.bias";
inline constexpr std::string_view kAttnQNorm = "attn_q_norm.weight";  // qwen3
inline constexpr std::string_view kAttnKNorm = "attn_k_norm.weight";
inline constexpr std::string_view kFfnNorm = "ffn_norm.weight";
inline constexpr std::string_view kFfnGate = "ffn_gate.weight";
inline constexpr std::string_view kFfnUp = "ffn_up.weight";
inline constexpr std::string_view kFfnDown = "ffn_down.weight";

// "blk.<layer>.<suffix>".
inline std::string block_tensor_name(int64_t layer, std::string_view suffix) {
  return "blk." + std::to_string(layer) + "." + std::string(suffix);
}

}  // namespace baton::gguf::tensor_names
