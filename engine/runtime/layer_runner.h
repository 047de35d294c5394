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

  // Pipelined form, used by the serving scheduler: submit() starts a forward pass and returns
  // as soon as the runner has taken it; finish() waits for the OLDEST unfinished pass and
  // fills its out_rows. Passes complete in submission order. At most max_in_flight() passes
  // may be unfinished at once (a chain of N workers can keep N busy). The default runs
  // forward() inside submit() (max_in_flight() == 1). A failure is thrown from submit() or
  // finish(); after it, every unfinished pass is lost.
  virtual int max_in_flight() const { return 1; }
  virtual void submit(const TokenBatch& batch, std::vector<float>& hidden);
  virtual void finish(std::vector<float>& out_rows);

 private:
  std::vector<float> pending_rows_;  // default submit/finish: the one completed pass
  bool pending_ = false;
};

// Copies the rows flagged in batch.output from hidden into out_rows.
void gather_output_rows(const TokenBatch& batch, const std::vector<float>& hidden, int64_t n_embd,
                        std::vector<float>& out_rows);

}  // namespace baton
