#include "engine/model/row_hint.h"

#include "engine/base/error.h"
#include "kernels/attention/attention.h"

namespace baton {

RowHint RowHint::decode(uint8_t byte) {
  const uint8_t order = byte & 3;
  if (byte > 7 || order > static_cast<uint8_t>(kernels::RowOrder::kGrouped))
    fail("row hint {} is not a valid hint", byte);
  return RowHint{static_cast<kernels::RowOrder>(order), (byte & 4) != 0};
}

// kernels::row_orders' rule and the stage's tiled threshold, for one row.
RowHint RowHint::in_chunk(int64_t offset, int64_t rows) {
  RowHint h;
  h.tiled = rows >= kernels::kAttentionTiledMinRows;
  if (rows == 1) h.order = kernels::RowOrder::kSingle;
  else h.order = offset < rows - rows % 4 ? kernels::RowOrder::kGrouped : kernels::RowOrder::kBatch;
  return h;
}

}  // namespace baton
