#include "engine/runtime/local_layers.h"

#include <cstring>

#include "engine/base/error.h"

namespace baton {

void gather_output_rows(const TokenBatch& batch, const std::vector<float>& hidden, int64_t n_embd,
                        std::vector<float>& out_rows) {
  out_rows.resize(batch.n_outputs() * static_cast<size_t>(n_embd));
  size_t r = 0;
  for (size_t t = 0; t < batch.size(); ++t)
    if (batch.output[t])
      std::memcpy(out_rows.data() + (r++) * n_embd, hidden.data() + t * n_embd, sizeof(float) * n_embd);
}

LocalLayers::LocalLayers(std::shared_ptr<const gguf::GgufFile> file, const ModelConfig& config,
                         const StageOptions& options, kernels::ThreadPool& pool, std::vector<LayerSpan> ranges)
    : n_embd_(config.n_embd) {
  if (ranges.empty()) ranges.push_back({0, config.n_layer});
  int64_t expected = 0;
  for (const LayerSpan& span : ranges) {
    const int64_t first = span.begin, last = span.end;
    if (first != expected || last <= first)
      fail("layer ranges must cover 0..{} contiguously; range [{}, {}) does not follow layer {}", config.n_layer, first,
           last, expected);
    stages_.push_back(std::make_unique<Stage>(file, config, first, last, options, pool));
    expected = last;
  }
  if (expected != config.n_layer) fail("layer ranges end at {}, the model has {} layers", expected, config.n_layer);
}

void LocalLayers::forward(const TokenBatch& batch, std::vector<float>& hidden, std::vector<float>& out_rows) {
  for (auto& stage : stages_) stage->forward(batch, hidden.data());
  gather_output_rows(batch, hidden, n_embd_, out_rows);
}

void LocalLayers::reset_sequence(uint64_t seq_id) {
  for (auto& stage : stages_) stage->reset_sequence(seq_id);
}

size_t LocalLayers::weight_bytes() const {
  size_t total = 0;
  for (const auto& s : stages_) total += s->weight_bytes();
  return total;
}

}  // namespace baton
