// The K-quant kernel family's rows of the type table: Q2_K..Q6_K weights (gemm against Q8_K
// activations) and Q8_K itself (activation quantizer only). Weight quantizers are the scalar
// reference ones for every ISA: quantizing a model is a one-off job.
#include "kernels/kquant/qx_K_lanes.h"
#include "kernels/kquant/kernels.h"
#include "kernels/kquant/qx_K_x16.h"
#include "kernels/core/type_ops_families.h"
#include "kernels/kquant/q4_K_lanes_avxvnni.h"

namespace baton::kernels::detail {
namespace {

constexpr TypeOps weight_ops(GgmlType type, ToFloatFn to_float, FromFloatFn quantize, GemmFn gemm) {
  return TypeOps{type, GgmlType::kQ8_K, to_float, quantize, gemm};
}

// The same with the gemm of rows in full groups of 4 (TypeOps::gemm_grouped).
constexpr TypeOps with_grouped(TypeOps ops, GemmFn grouped) {
  ops.gemm_grouped = grouped;
  return ops;
}

constexpr TypeOps kScalar[] = {
    weight_ops(GgmlType::kQ2_K, scalar::dequantize_q2_k, scalar::quantize_q2_k_ref, scalar::gemm_q2_k),
    weight_ops(GgmlType::kQ3_K, scalar::dequantize_q3_k, scalar::quantize_q3_k_ref, scalar::gemm_q3_k),
    with_grouped(weight_ops(GgmlType::kQ4_K, scalar::dequantize_q4_k, scalar::quantize_q4_k_ref, scalar::gemm_q4_k),
                 scalar::gemm_q4_k_grouped),
    weight_ops(GgmlType::kQ5_K, scalar::dequantize_q5_k, scalar::quantize_q5_k_ref, scalar::gemm_q5_k),
    weight_ops(GgmlType::kQ6_K, scalar::dequantize_q6_k, scalar::quantize_q6_k_ref, scalar::gemm_q6_k),
    TypeOps{GgmlType::kQ8_K, GgmlType::kQ8_K, scalar::dequantize_q8_k, scalar::quantize_q8_k, nullptr},
};

// Q4_K with its 16-row load-time layout (kquant/q4_K_gemm_x16.h) and the gemms on it.
constexpr TypeOps with_x16(TypeOps ops, GemmFn gemm_repacked, GemmFn gemm_grouped_repacked) {
  ops.repack_rows = 16;
  ops.repack = scalar::repack_q4_k_x16;
  ops.unrepack = scalar::unrepack_q4_k_x16;
  ops.gemm_repacked = gemm_repacked;
  ops.gemm_grouped_repacked = gemm_grouped_repacked;
  return ops;
}

// Q5_K with a 16-row load-time layout: x16 (kquant/q5_K_gemm_x16.h) on AVX-512, x16p
// (kquant/q5_K_gemm_x16p_avx2.cpp) on AVX2.
constexpr TypeOps with_q5k_layout(TypeOps ops, void (*repack)(const void*, void*, int64_t, int64_t),
                                  void (*unrepack)(const void*, void*, int64_t, int64_t), GemmFn gemm_repacked) {
  ops.repack_rows = 16;
  ops.repack = repack;
  ops.unrepack = unrepack;
  ops.gemm_repacked = gemm_repacked;
  return ops;
}
constexpr TypeOps with_q5k_x16(TypeOps ops, GemmFn gemm_repacked) {
  return with_q5k_layout(ops, scalar::repack_q5_k_x16, scalar::unrepack_q5_k_x16, gemm_repacked);
}

constexpr TypeOps kAvx2[] = {
    weight_ops(GgmlType::kQ2_K, avx2::dequantize_q2_k, scalar::quantize_q2_k_ref, avx2::gemm_q2_k_lanes),
    weight_ops(GgmlType::kQ3_K, avx2::dequantize_q3_k, scalar::quantize_q3_k_ref, avx2::gemm_q3_k_lanes),
    with_grouped(weight_ops(GgmlType::kQ4_K, avx2::dequantize_q4_k, scalar::quantize_q4_k_ref, avx2::gemm_q4_k),
                 avx2::gemm_q4_k_grouped),
    with_q5k_layout(weight_ops(GgmlType::kQ5_K, avx2::dequantize_q5_k, scalar::quantize_q5_k_ref, avx2::gemm_q5_k),
                    scalar::repack_q5_k_x16p, scalar::unrepack_q5_k_x16p, avx2::gemm_q5_k_x16p),
    weight_ops(GgmlType::kQ6_K, avx2::dequantize_q6_k, scalar::quantize_q6_k_ref, avx2::gemm_q6_k_lanes),
    TypeOps{GgmlType::kQ8_K, GgmlType::kQ8_K, scalar::dequantize_q8_k, avx2::quantize_q8_k, nullptr},
};

// The AVX-VNNI tier: the AVX2 gemms built with vpdpbusd / vpdpwssd (simd256_tier.h), same bits;
// Q4_K batches by the token-parallel kernels of q4_K_lanes_avxvnni.cpp.
constexpr TypeOps kAvxVnni[] = {
    weight_ops(GgmlType::kQ2_K, avx2::dequantize_q2_k, scalar::quantize_q2_k_ref, avxvnni::gemm_q2_k_lanes),
    weight_ops(GgmlType::kQ3_K, avx2::dequantize_q3_k, scalar::quantize_q3_k_ref, avxvnni::gemm_q3_k_lanes),
    with_grouped(
        weight_ops(GgmlType::kQ4_K, avx2::dequantize_q4_k, scalar::quantize_q4_k_ref, avxvnni::gemm_q4_k_lanes),
        avxvnni::gemm_q4_k_grouped_lanes),
    with_q5k_layout(weight_ops(GgmlType::kQ5_K, avx2::dequantize_q5_k, scalar::quantize_q5_k_ref, avxvnni::gemm_q5_k),
                    scalar::repack_q5_k_x16p, scalar::unrepack_q5_k_x16p, avxvnni::gemm_q5_k_x16p),
    weight_ops(GgmlType::kQ6_K, avx2::dequantize_q6_k, scalar::quantize_q6_k_ref, avxvnni::gemm_q6_k_lanes),
    TypeOps{GgmlType::kQ8_K, GgmlType::kQ8_K, scalar::dequantize_q8_k, avx2::quantize_q8_k, nullptr},
};

constexpr TypeOps kAvx512[] = {
    weight_ops(GgmlType::kQ2_K, avx512::dequantize_q2_k, scalar::quantize_q2_k_ref, avx512::gemm_q2_k_lanes),
    weight_ops(GgmlType::kQ3_K, avx512::dequantize_q3_k, scalar::quantize_q3_k_ref, avx512::gemm_q3_k_lanes),
    with_x16(
        with_grouped(weight_ops(GgmlType::kQ4_K, avx512::dequantize_q4_k, scalar::quantize_q4_k_ref, avx512::gemm_q4_k),
                     avx512::gemm_q4_k_grouped),
        avx512::gemm_q4_k_x16, avx512::gemm_q4_k_x16_grouped),
    with_q5k_x16(weight_ops(GgmlType::kQ5_K, avx512::dequantize_q5_k, scalar::quantize_q5_k_ref, avx512::gemm_q5_k),
                 avx512::gemm_q5_k_x16),
    weight_ops(GgmlType::kQ6_K, avx512::dequantize_q6_k, scalar::quantize_q6_k_ref, avx512::gemm_q6_k_lanes),
    TypeOps{GgmlType::kQ8_K, GgmlType::kQ8_K, scalar::dequantize_q8_k, avx512::quantize_q8_k, nullptr},
};

// AVX-512 with VNNI: the same, with gemms that switch to the token-parallel kernel for batches.
constexpr TypeOps kAvx512Vnni[] = {
    weight_ops(GgmlType::kQ2_K, avx512::dequantize_q2_k, scalar::quantize_q2_k_ref, avx512::gemm_q2_k_lanes),
    weight_ops(GgmlType::kQ3_K, avx512::dequantize_q3_k, scalar::quantize_q3_k_ref, avx512::gemm_q3_k_lanes),
    with_x16(with_grouped(weight_ops(GgmlType::kQ4_K, avx512::dequantize_q4_k, scalar::quantize_q4_k_ref,
                                     avx512::gemm_q4_k_vnni),
                          avx512::gemm_q4_k_grouped_vnni),
             avx512::gemm_q4_k_x16_vnni, avx512::gemm_q4_k_x16_grouped_vnni),
    with_q5k_x16(
        weight_ops(GgmlType::kQ5_K, avx512::dequantize_q5_k, scalar::quantize_q5_k_ref, avx512::gemm_q5_k_vnni),
        avx512::gemm_q5_k_x16_vnni),
    weight_ops(GgmlType::kQ6_K, avx512::dequantize_q6_k, scalar::quantize_q6_k_ref, avx512::gemm_q6_k_lanes_vnni),
    TypeOps{GgmlType::kQ8_K, GgmlType::kQ8_K, scalar::dequantize_q8_k, avx512::quantize_q8_k, nullptr},
};

const TypeOps* find_in(const TypeOps (&table)[6], GgmlType type) {
  for (const TypeOps& ops : table)
    if (ops.type == type) return &ops;
  return nullptr;
}

}  // namespace

const TypeOps* k_quant_type_ops(GgmlType type, Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return find_in(has_avx512_vnni() ? kAvx512Vnni : kAvx512, type);
    case Isa::kAvxVnni: return find_in(kAvxVnni, type);
    case Isa::kAvx2: return find_in(kAvx2, type);
    case Isa::kScalar: break;
  }
  return find_in(kScalar, type);
}

}  // namespace baton::kernels::detail
