// Internal: each kernel family answers for its own types (nullptr for others). The family
// handles ISA fallback itself: asked for avx512 without such a variant, it returns avx2's.
#pragma once

#include "kernels/core/type_ops.h"

namespace baton::kernels::detail {

const TypeOps* float_type_ops(GgmlType type, Isa isa);         // F32, F16, BF16
const TypeOps* legacy_quant_type_ops(GgmlType type, Isa isa);  // Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1
const TypeOps* k_quant_type_ops(GgmlType type, Isa isa);       // Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K

}  // namespace baton::kernels::detail
