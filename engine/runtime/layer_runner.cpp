#include "engine/runtime/layer_runner.h"

#include "engine/base/error.h"

namespace baton {

void LayerRunner::submit(const TokenBatch& batch, std::vector<float>& hidden) {
  if (pending_) fail("LayerRunner::submit: this runner keeps one pass in flight; call finish() first");
  pending_rows_.clear();
  forward(batch, hidden, pending_rows_);
  pending_ = true;
}

void LayerRunner::finish(std::vector<float>& out_rows) {
  if (!pending_) fail("LayerRunner::finish: no forward pass was submitted");
  pending_ = false;
  out_rows.swap(pending_rows_);
}

}  // namespace baton
