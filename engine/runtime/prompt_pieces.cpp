#include "engine/runtime/prompt_pieces.h"

#include <algorithm>

namespace baton {

RowHint prompt_row_hint(size_t n_prompt, size_t pos, size_t n_batch) {
  const size_t chunk = pos / n_batch * n_batch;
  const size_t m = std::min(n_batch, n_prompt - chunk);
  return RowHint::in_chunk(static_cast<int64_t>(pos - chunk), static_cast<int64_t>(m));
}

size_t next_prompt_piece(size_t n_prompt, size_t n_fed, size_t n_batch, size_t prefill_chunk) {
  const size_t chunk_end = std::min(n_prompt, n_fed / n_batch * n_batch + n_batch);
  const size_t rest = chunk_end - n_fed;
  return prefill_chunk == 0 ? rest : std::min(prefill_chunk, rest);
}

size_t reusable_prefix(size_t n_prompt, size_t n_batch) {
  for (size_t chunk = 0; chunk < n_prompt; chunk += n_batch) {
    const size_t m = std::min(n_batch, n_prompt - chunk);
    const RowHint first = RowHint::in_chunk(0, static_cast<int64_t>(m));
    if (!first.tiled || first.order != kernels::RowOrder::kGrouped) return chunk;
    if (m % 4 != 0) return chunk + m - m % 4;
  }
  return n_prompt;
}

size_t prefix_reuse_start(size_t n_prompt, size_t shared, size_t n_batch) {
  if (n_prompt == 0) return 0;
  return std::min({shared, reusable_prefix(n_prompt, n_batch), n_prompt - 1});
}

}  // namespace baton
