// A batch of tokens from one or more sequences, as a pipeline stage sees it: per token its
// sequence id, its position in that sequence and whether its final hidden row is wanted
// (for logits). Tokens of one sequence appear in increasing position order. Optionally each
// token's numerics hint (engine/model/row_hint.h); empty: the stage derives them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace baton {

struct TokenBatch {
  std::vector<uint64_t> seq_ids;
  std::vector<int32_t> positions;
  std::vector<uint8_t> output;  // 1 = this token's row goes to the output head
  std::vector<uint8_t> hints;   // RowHint::encode() per token, or empty (all or none)

  size_t size() const { return seq_ids.size(); }
  void add(uint64_t seq_id, int32_t pos, bool want_output) {
    seq_ids.push_back(seq_id);
    positions.push_back(pos);
    output.push_back(want_output ? 1 : 0);
  }
  size_t n_outputs() const {
    size_t n = 0;
    for (auto o : output) n += o;
    return n;
  }
  void add(uint64_t seq_id, int32_t pos, bool want_output, uint8_t hint) {
    add(seq_id, pos, want_output);
    hints.push_back(hint);
  }
  void clear() {
    seq_ids.clear();
    positions.clear();
    output.clear();
    hints.clear();
  }
};

}  // namespace baton
