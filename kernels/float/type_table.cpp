// The kernel table of the float formats: F32, F16 and BF16 weights multiply activations of
// the same type (llama.cpp's vec_dot_type). Every ISA has its own variant of each; gemm is
// llama.cpp's batch (tinyBLAS) order, gemm_single its single-row (vec_dot) order.
#include "kernels/float/kernels.h"
#include "kernels/core/type_ops_families.h"

namespace baton::kernels::detail {
namespace {

constexpr TypeOps kF32[] = {
    {GgmlType::kF32, GgmlType::kF32, scalar::f32_to_float, scalar::copy_f32, scalar::gemm_f32, scalar::gemm_f32_single,
     kTinyBlasRowMultiple},
    {GgmlType::kF32, GgmlType::kF32, scalar::f32_to_float, scalar::copy_f32, avx2::gemm_f32, avx2::gemm_f32_single,
     kTinyBlasRowMultiple},
    {GgmlType::kF32, GgmlType::kF32, scalar::f32_to_float, scalar::copy_f32, avx512::gemm_f32, avx512::gemm_f32_single,
     kTinyBlasRowMultiple},
};
constexpr TypeOps kF16[] = {
    {GgmlType::kF16, GgmlType::kF16, scalar::f16_to_float, scalar::float_to_f16, scalar::gemm_f16,
     scalar::gemm_f16_single, kTinyBlasRowMultiple},
    {GgmlType::kF16, GgmlType::kF16, avx2::f16_to_float, avx2::float_to_f16, avx2::gemm_f16, avx2::gemm_f16_single,
     kTinyBlasRowMultiple},
    {GgmlType::kF16, GgmlType::kF16, avx512::f16_to_float, avx512::float_to_f16, avx512::gemm_f16,
     avx512::gemm_f16_single, kTinyBlasRowMultiple},
};
constexpr TypeOps kBF16[] = {
    {GgmlType::kBF16, GgmlType::kBF16, scalar::bf16_to_float, scalar::float_to_bf16, scalar::gemm_bf16,
     scalar::gemm_bf16_single, kTinyBlasRowMultiple},
    {GgmlType::kBF16, GgmlType::kBF16, avx2::bf16_to_float, avx2::float_to_bf16, avx2::gemm_bf16,
     avx2::gemm_bf16_single, kTinyBlasRowMultiple},
    {GgmlType::kBF16, GgmlType::kBF16, avx512::bf16_to_float, avx512::float_to_bf16, avx512::gemm_bf16,
     avx512::gemm_bf16_single, kTinyBlasRowMultiple},
};

}  // namespace

const TypeOps* float_type_ops(GgmlType type, Isa isa) {
  if (isa == Isa::kAvxVnni) isa = Isa::kAvx2;                     // no int8 dot products here: AVX2's kernels
  const int i = isa == Isa::kAvx512 ? 2 : static_cast<int>(isa);  // rows: scalar, avx2, avx512
  if (i < 0 || i > 2) return nullptr;
  switch (type) {
    case GgmlType::kF32: return &kF32[i];
    case GgmlType::kF16: return &kF16[i];
    case GgmlType::kBF16: return &kBF16[i];
    default: return nullptr;
  }
}

}  // namespace baton::kernels::detail
