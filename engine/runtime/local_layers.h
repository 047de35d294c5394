// All transformer layers in this process: one Stage per configured range, run in order.
// Several ranges in one process exist to check that any split gives the same result.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "engine/model/stage.h"
#include "engine/base/layer_span.h"
#include "engine/runtime/layer_runner.h"

namespace baton {

class LocalLayers : public LayerRunner {
 public:
  // ranges: spans covering 0..n_layer contiguously; empty = one stage of all layers.
  LocalLayers(std::shared_ptr<const gguf::GgufFile> file, const ModelConfig& config, const StageOptions& options,
              kernels::ThreadPool& pool, std::vector<LayerSpan> ranges = {});

  void forward(const TokenBatch& batch, std::vector<float>& hidden, std::vector<float>& out_rows) override;
  void reset_sequence(uint64_t seq_id) override;
  int64_t n_ctx() const override { return stages_.front()->n_ctx(); }
  size_t weight_bytes() const;
  // Sequences holding a KV cache slot (in the first stage; every stage sees the same ones).
  int active_sequences() const { return stages_.front()->active_sequences(); }

 private:
  int64_t n_embd_;
  std::vector<std::unique_ptr<Stage>> stages_;
};

}  // namespace baton
