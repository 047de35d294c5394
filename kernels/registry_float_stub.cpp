// Placeholder until the float kernel family lands: no types.
#include "kernels/type_ops_registry.h"

namespace baton::kernels::detail {
const TypeOps* float_type_ops(GgmlType, Isa) { return nullptr; }
}  // namespace baton::kernels::detail
