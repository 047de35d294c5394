// How a prompt is cut into forward passes, so that every way of running it gives the same bits.
//
// A row's numerics depend on the chunk of the prompt it is computed in (llama.cpp's kernel
// choice, docs/NUMERICS.md): the reference cut is llama.cpp's, chunks of n_batch tokens from
// position 0, and a row of a chunk of m rows gets the grouped matmul order when its offset is
// below m - m % 4 (the batch order for the last m % 4, the single-row order when m == 1) and the
// tiled attention when m >= 64. Every pass of a prompt carries each row's hint from that cut
// (engine/model/row_hint.h), so a chunk may go as pieces of any size (pipelined prefill: several
// pieces of one prompt in flight at once) and a prompt may continue from a cached prefix at any
// position: the rows still get the bits of the run from scratch.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "engine/model/row_hint.h"

namespace baton {

// The hint of row `pos` of a prompt of n_prompt tokens cut into n_batch chunks from its start.
RowHint prompt_row_hint(size_t n_prompt, size_t pos, size_t n_batch);

// Tokens of the next pass of a prompt of n_prompt tokens of which n_fed went through passes
// already (n_fed < n_prompt): at most prefill_chunk (>= 1; 0: whole chunks), never crossing an
// n_batch chunk boundary.
size_t next_prompt_piece(size_t n_prompt, size_t n_fed, size_t n_batch, size_t prefill_chunk);

// The piece size when none is asked for: with S > 1 passes in flight (a pipeline of S stages)
// a prompt of P pieces takes (P + S - 1) piece-stage times, so longer chains want smaller pieces:
// 128 / S tokens, within [8, 32] (32 measured best on 2 stages for 512 tokens and more,
// docs/BENCHMARKS.md "Session 16"; the paper model there for 39). A prompt of n_prompt tokens
// shorter than 16 such pieces gets about 4 pieces per stage instead (a multiple of 4, at least 8):
// the chain's fill and drain is one piece per stage, and a pass costs little more than its rows
// (2 stages, 128 tokens: pieces of 16, docs/BENCHMARKS.md "Session 19"). One runner takes whole chunks.
inline size_t auto_prompt_piece(int n_batch, int max_in_flight, size_t n_prompt = SIZE_MAX) {
  if (max_in_flight <= 1) return static_cast<size_t>(n_batch);
  const size_t stages = static_cast<size_t>(max_in_flight);
  const size_t piece = std::clamp<size_t>(128 / stages, 8, 32);
  const size_t short_prompt_piece = std::max<size_t>(8, n_prompt / (4 * stages) / 4 * 4);
  return std::min(piece, short_prompt_piece);
}

// The leading positions of a prompt of n_prompt tokens whose KV rows were computed in the
// grouped matmul order and the tiled attention: the part of its KV cache another prompt can
// reuse bit for bit (in that prompt's run from scratch those positions get the same order when
// they are in its own reusable prefix too).
size_t reusable_prefix(size_t n_prompt, size_t n_batch);

// Where a prompt of n_prompt tokens may start computing when the KV of its first `shared`
// tokens is in the cache, computed by another prompt within that prompt's reusable_prefix():
// positions below the result get the same order in this prompt's run from scratch. 0: none.
size_t prefix_reuse_start(size_t n_prompt, size_t shared, size_t n_batch);

}  // namespace baton
