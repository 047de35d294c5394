// What the coordinator side needs from "the transformer layers", wherever they run: in this
// process (LocalLayers) or along a chain of workers (the pipeline). The generator and the
// scheduler only talk to this interface.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model/token_batch.h"

namespace baton {

class LayerRunner {
 public:
  virtual ~LayerRunner() = default;
  // hidden: [batch.size(), n_embd] embeddings of the batch's tokens (may be consumed).
  // out_rows: resized to [batch.n_outputs(), n_embd], the final hidden rows of the tokens whose
  // output flag is set, in batch order. Throws baton::Error (a local or remote failure).
  virtual void forward(const TokenBatch& batch, std::vector<float>& hidden, std::vector<float>& out_rows) = 0;
  // Forgets a sequence's KV cache everywhere.
  virtual void reset_sequence(uint64_t seq_id) = 0;
  virtual int64_t n_ctx() const = 0;
};

// Copies the rows flagged in batch.output from hidden into out_rows.
void gather_output_rows(const TokenBatch& batch, const std::vector<float>& hidden, int64_t n_embd,
                        std::vector<float>& out_rows);

}  // namespace baton
