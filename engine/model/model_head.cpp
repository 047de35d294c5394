#include "engine/model/model_head.h"

#include "engine/base/error.h"
#include "kernels/ops/ops.h"

namespace baton {

ModelHead::ModelHead(std::shared_ptr<const gguf::GgufFile> file, const ModelConfig& config, kernels::ThreadPool& pool,
                     WeightPlacement placement)
    : file_(std::move(file)), config_(config), head_(bind_head(*file_, config, placement)), matmul_(pool) {}

void ModelHead::embed(std::span<const int32_t> tokens, float* out) {
  kernels::get_rows(head_.token_embd, tokens, out, static_cast<size_t>(config_.n_embd));
}

void ModelHead::logits(const float* hidden, int64_t n_rows, float* logits) {
  const int64_t n_embd = config_.n_embd;
  normed_.resize(static_cast<size_t>(n_rows * n_embd));
  for (int64_t r = 0; r < n_rows; ++r)
    kernels::rms_norm(hidden + r * n_embd, head_.output_norm.data(), normed_.data() + r * n_embd, n_embd,
                      config_.rms_eps);
  // every row is its sequence's only output row of the pass: llama.cpp's single-row order
  orders_.assign(static_cast<size_t>(n_rows), kernels::RowOrder::kSingle);
  matmul_.matmul(head_.output, normed_.data(), n_rows, logits, orders_);
}

}  // namespace baton
