// The ends of the model that live on the coordinator: the token embedding (tokens → first
// hidden rows) and the output head (final RMSNorm and lm_head: hidden rows → logits).
// Not thread-safe (owns matmul scratch).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/model/weights.h"
#include "gguf/gguf_file.h"
#include "kernels/core/matmul.h"

namespace baton {

class ModelHead {
 public:
  ModelHead(std::shared_ptr<const gguf::GgufFile> file, const ModelConfig& config, kernels::ThreadPool& pool,
            WeightPlacement placement = WeightPlacement::kResident);

  // out: [tokens.size(), n_embd]. Throws baton::Error for a token id outside the vocabulary.
  void embed(std::span<const int32_t> tokens, float* out);
  // hidden: [n_rows, n_embd] (not modified); logits: [n_rows, n_vocab]. Each row is taken to be
  // the only output row of its sequence in the pass (llama.cpp's single-row matmul order, see
  // docs/NUMERICS.md): true for every caller, which asks one row per sequence.
  void logits(const float* hidden, int64_t n_rows, float* logits);

  int64_t n_vocab() const { return head_.output.n_rows; }
  const ModelConfig& config() const { return config_; }

 private:
  std::shared_ptr<const gguf::GgufFile> file_;
  ModelConfig config_;
  HeadWeights head_;
  kernels::MatmulDriver matmul_;
  std::vector<float> normed_;
  std::vector<kernels::RowOrder> orders_;
};

}  // namespace baton
