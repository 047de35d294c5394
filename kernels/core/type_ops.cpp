#include "kernels/core/type_ops.h"

#include "engine/base/error.h"
#include "kernels/core/type_ops_families.h"

namespace baton::kernels {

const TypeOps* find_type_ops(GgmlType type, Isa isa) {
  if (const TypeOps* ops = detail::float_type_ops(type, isa)) return ops;
  if (const TypeOps* ops = detail::legacy_quant_type_ops(type, isa)) return ops;
  return detail::k_quant_type_ops(type, isa);
}

const TypeOps& require_type_ops(GgmlType type, std::string_view tensor_name) {
  const TypeOps* ops = find_type_ops(type, active_isa());
  if (!ops || !ops->gemm)
    fail<UnsupportedError>("unsupported type {} for tensor {}", ggml_type_name(type), tensor_name);
  return *ops;
}

}  // namespace baton::kernels
