#include "engine/runtime/prompt_runner.h"

#include <deque>

#include "engine/base/error.h"
#include "engine/runtime/prompt_pieces.h"

namespace baton {

void run_prompt_pieces(ModelHead& head, LayerRunner& layers, uint64_t seq_id, std::span<const int32_t> tokens,
                       int32_t pos0, const PromptCut& cut, std::vector<float>& out_row,
                       const PromptProgress& progress) {
  if (tokens.empty()) fail("run_prompt_pieces: no tokens");
  if (cut.n_batch == 0) fail("n_batch must be positive");
  const size_t n_embd = static_cast<size_t>(head.config().n_embd);
  const size_t prefill_chunk =
      cut.prefill_chunk > 0 ? cut.prefill_chunk
                            : auto_prompt_piece(static_cast<int>(cut.n_batch), layers.max_in_flight(), tokens.size());
  struct Piece {
    TokenBatch batch;
    std::vector<float> hidden;
  };
  std::deque<Piece> in_flight;  // alive until finished, whatever the runner does with them
  size_t fed = 0, done = 0;
  while (fed < tokens.size() || !in_flight.empty()) {
    if (fed < tokens.size() && static_cast<int>(in_flight.size()) < layers.max_in_flight()) {
      const size_t n = next_prompt_piece(tokens.size(), fed, cut.n_batch, prefill_chunk);
      Piece& piece = in_flight.emplace_back();
      for (size_t i = 0; i < n; ++i)
        piece.batch.add(seq_id, pos0 + static_cast<int32_t>(fed + i), fed + i + 1 == tokens.size(),
                        prompt_row_hint(tokens.size(), fed + i, cut.n_batch).encode());
      piece.hidden.resize(n * n_embd);
      head.embed(tokens.subspan(fed, n), piece.hidden.data());
      layers.submit(piece.batch, piece.hidden);
      fed += n;
      continue;
    }
    layers.finish(out_row);
    done += in_flight.front().batch.size();
    in_flight.pop_front();
    if (progress) progress(done, tokens.size());
  }
}

}  // namespace baton
