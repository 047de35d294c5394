// How the numerics treat one row of a pass: which of llama.cpp's matmul orders it gets and
// whether its attention takes the tiled mode (docs/NUMERICS.md). Without hints a stage derives
// them from the pass, as llama.cpp does from its micro-batch: by how many rows of the row's own
// sequence share it. A coordinator that cuts a prompt into pieces (pipelined prefill) or
// continues it from a cached prefix sends each row the hint of the chunk the row belongs to in
// the run from scratch, so every way of running a prompt gives the same bits. Speculative
// decoding sends a generated token and its draft as rows hinted single: each as a pass of its own.
// In a hinted pass every output row's last-layer FFN (computed for output rows only, as in
// llama.cpp) takes the single-row order: in the reference run each is its sequence's only output.
// The byte travels on the wire (Forward.row_hints): bits 0-1 the order, bit 2 tiled.
#pragma once

#include <cstdint>

#include "kernels/core/matmul.h"

namespace baton {

struct RowHint {
  kernels::RowOrder order = kernels::RowOrder::kSingle;
  bool tiled = false;

  uint8_t encode() const { return static_cast<uint8_t>(static_cast<uint8_t>(order) | (tiled ? 4 : 0)); }
  // Throws baton::Error for a byte that is not a hint.
  static RowHint decode(uint8_t byte);
  // The row at `offset` of a chunk of `rows` rows of one sequence, as a stage would derive it.
  static RowHint in_chunk(int64_t offset, int64_t rows);
  bool operator==(const RowHint&) const = default;
};

}  // namespace baton
