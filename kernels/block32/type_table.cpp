// The kernel table of the legacy block formats. vec_dot_type as in llama.cpp: Q4_0, Q5_0 and
// Q8_0 weights multiply Q8_0 activations, Q4_1 and Q5_1 multiply Q8_1; Q8_1 is an activation
// format only (no gemm). Weight quantizers are the scalar *_ref ones on every ISA (they run
// offline); Q8_0's from_float is the activation quantizer (see block32/kernels.h).
#include "kernels/block32/kernels.h"
#include "kernels/core/type_ops_families.h"

namespace baton::kernels::detail {
namespace {

struct IsaFns {
  ToFloatFn dq4_0, dq4_1, dq5_0, dq5_1, dq8_0, dq8_1;
  FromFloatFn q8_0, q8_1;
  GemmFn g4_0, g4_1, g5_0, g5_1, g8_0;
};

constexpr IsaFns kScalarFns = {scalar::dequantize_q4_0, scalar::dequantize_q4_1, scalar::dequantize_q5_0,
                               scalar::dequantize_q5_1, scalar::dequantize_q8_0, scalar::dequantize_q8_1,
                               scalar::quantize_q8_0,   scalar::quantize_q8_1,   scalar::gemm_q4_0,
                               scalar::gemm_q4_1,       scalar::gemm_q5_0,       scalar::gemm_q5_1,
                               scalar::gemm_q8_0};
constexpr IsaFns kAvx2Fns = {avx2::dequantize_q4_0, avx2::dequantize_q4_1, avx2::dequantize_q5_0, avx2::dequantize_q5_1,
                             avx2::dequantize_q8_0, avx2::dequantize_q8_1, avx2::quantize_q8_0,   avx2::quantize_q8_1,
                             avx2::gemm_q4_0,       avx2::gemm_q4_1,       avx2::gemm_q5_0,       avx2::gemm_q5_1,
                             avx2::gemm_q8_0};
constexpr IsaFns kAvx512Fns = {avx512::dequantize_q4_0, avx512::dequantize_q4_1, avx512::dequantize_q5_0,
                               avx512::dequantize_q5_1, avx512::dequantize_q8_0, avx512::dequantize_q8_1,
                               avx512::quantize_q8_0,   avx512::quantize_q8_1,   avx512::gemm_q4_0,
                               avx512::gemm_q4_1,       avx512::gemm_q5_0,       avx512::gemm_q5_1,
                               avx512::gemm_q8_0};

// The AVX-VNNI tier: AVX2's conversions, the AVX2 gemms built with vpdpbusd (simd256_tier.h).
IsaFns avxvnni_fns() {
  IsaFns f = kAvx2Fns;
  f.g4_0 = avxvnni::gemm_q4_0;
  f.g4_1 = avxvnni::gemm_q4_1;
  f.g5_0 = avxvnni::gemm_q5_0;
  f.g5_1 = avxvnni::gemm_q5_1;
  f.g8_0 = avxvnni::gemm_q8_0;
  return f;
}

IsaFns with_vnni(IsaFns f) {
  f.g4_0 = avx512::gemm_q4_0_vnni;
  f.g4_1 = avx512::gemm_q4_1_vnni;
  f.g5_0 = avx512::gemm_q5_0_vnni;
  f.g5_1 = avx512::gemm_q5_1_vnni;
  f.g8_0 = avx512::gemm_q8_0_vnni;
  return f;
}

enum Slot { kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0, kQ8_1, kSlots };

constexpr int kIsas = 4;  // rows indexed by Isa: scalar, avx2, avxvnni, avx512

struct Table {
  TypeOps ops[kIsas][kSlots];
};

Table build() {
  Table t;
  const IsaFns fns[kIsas] = {kScalarFns, kAvx2Fns, avxvnni_fns(),
                             has_avx512_vnni() ? with_vnni(kAvx512Fns) : kAvx512Fns};
  for (int i = 0; i < kIsas; ++i) {
    const IsaFns& f = fns[i];
    t.ops[i][kQ4_0] = {GgmlType::kQ4_0, GgmlType::kQ8_0, f.dq4_0, scalar::quantize_q4_0_ref, f.g4_0};
    t.ops[i][kQ4_1] = {GgmlType::kQ4_1, GgmlType::kQ8_1, f.dq4_1, scalar::quantize_q4_1_ref, f.g4_1};
    t.ops[i][kQ5_0] = {GgmlType::kQ5_0, GgmlType::kQ8_0, f.dq5_0, scalar::quantize_q5_0_ref, f.g5_0};
    t.ops[i][kQ5_1] = {GgmlType::kQ5_1, GgmlType::kQ8_1, f.dq5_1, scalar::quantize_q5_1_ref, f.g5_1};
    t.ops[i][kQ8_0] = {GgmlType::kQ8_0, GgmlType::kQ8_0, f.dq8_0, f.q8_0, f.g8_0};
    t.ops[i][kQ8_1] = {GgmlType::kQ8_1, GgmlType::kQ8_1, f.dq8_1, f.q8_1, nullptr};
  }
  // Q4_0 weights repacked into 16-row groups at load (block32/q4_0_gemm_x16.h); not on scalar.
  const GemmFn x16[kIsas] = {nullptr, avx2::gemm_q4_0_x16, avxvnni::gemm_q4_0_x16,
                             has_avx512_vnni() ? avx512::gemm_q4_0_x16_vnni : avx512::gemm_q4_0_x16};
  for (int i = 1; i < kIsas; ++i) {
    t.ops[i][kQ4_0].repack_rows = 16;
    t.ops[i][kQ4_0].repack = scalar::repack_q4_0_x16;
    t.ops[i][kQ4_0].unrepack = scalar::unrepack_q4_0_x16;
    t.ops[i][kQ4_0].gemm_repacked = x16[i];
  }
  return t;
}

}  // namespace

const TypeOps* legacy_quant_type_ops(GgmlType type, Isa isa) {
  static const Table table = build();
  const int i = static_cast<int>(isa);
  if (i < 0 || i >= kIsas) return nullptr;
  switch (type) {
    case GgmlType::kQ4_0: return &table.ops[i][kQ4_0];
    case GgmlType::kQ4_1: return &table.ops[i][kQ4_1];
    case GgmlType::kQ5_0: return &table.ops[i][kQ5_0];
    case GgmlType::kQ5_1: return &table.ops[i][kQ5_1];
    case GgmlType::kQ8_0: return &table.ops[i][kQ8_0];
    case GgmlType::kQ8_1: return &table.ops[i][kQ8_1];
    default: return nullptr;
  }
}

}  // namespace baton::kernels::detail
