// The per-(type, ISA) kernel table: how to dequantize, quantize and take dot products of
// one ggml number format. Weights are multiplied with activations that were first converted
// to the type's vec_dot_type, exactly as llama.cpp does (Q8_0 for Q4_0/Q5_0/Q8_0, Q8_1 for
// Q4_1/Q5_1, Q8_K for the K-quants, F16/BF16/F32 for the float types), so results agree
// with it to float rounding.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/base/ggml_type.h"
#include "kernels/core/isa.h"
#include "kernels/core/kernel_kinds.h"

namespace baton::kernels {

// Pointers to the kernel kinds of core/kernel_kinds.h. GemmFn's contract: out[t * out_stride + r] =
// dot(w row r, a row t) for r < n_rows, t < n_tok; each row has k elements (a multiple of the block
// size). w rows are w_stride bytes apart, a rows (already in vec_dot_type) a_stride bytes apart.
// Every output element is bitwise identical to what the call with n_rows = 1, n_tok = 1 gives for
// it (batch invariance).
using ToFloatFn = ToFloatKernel*;
using FromFloatFn = FromFloatKernel*;
using GemmFn = GemmKernel*;
using RepackFn = RepackKernel*;

struct TypeOps {
  GgmlType type = GgmlType::kF32;
  GgmlType vec_dot_type = GgmlType::kF32;
  ToFloatFn to_float = nullptr;
  FromFloatFn from_float = nullptr;  // nullptr when this build has no quantizer for the type
  GemmFn gemm = nullptr;             // nullptr for pure activation types (Q8_K, Q8_1)
  // The order for a token that is the only row of its sequence in the pass, when it differs
  // from gemm's (llama.cpp runs single rows through ggml_vec_dot_*, batches through tinyBLAS);
  // nullptr: gemm for every token. Same contract as gemm. MatmulDriver picks per token.
  GemmFn gemm_single = nullptr;
  // gemm's order is llama.cpp's only for weights whose row count is a multiple of this (its
  // batch kernel refuses other shapes); other weights use gemm_single for every token.
  int32_t gemm_rows_multiple = 1;
  // The order llama.cpp gives rows that sit in a full group of 4 rows of their sequence in one
  // pass (its repacked 4-row GEMM tiles; Q4_K): for a sequence with m rows in a pass, rows
  // [0, m - m % 4) use gemm_grouped, the others gemm (or gemm_single). nullptr: no such rows.
  // Same contract as gemm.
  GemmFn gemm_grouped = nullptr;
  // Optional load-time layout for decode speed (Q4_0 and Q5_K on AVX2/AVX-512, Q4_K on AVX-512):
  // repack(src, dst, n_rows, k) permutes the bytes of dense rows [0, n_rows) (n_rows a multiple of
  // repack_rows) within each group of repack_rows rows, keeping the size; unrepack is its inverse.
  // gemm_repacked multiplies such groups (n_rows a multiple of repack_rows, w_stride = the dense
  // row bytes) with gemm's results bit for bit; rows that need gemm_single / gemm_grouped (without
  // gemm_grouped_repacked) are unrepacked into scratch by MatmulDriver first. repack_rows = 0: no
  // such layout here.
  int32_t repack_rows = 0;
  RepackFn repack = nullptr;
  RepackFn unrepack = nullptr;
  GemmFn gemm_repacked = nullptr;
  // gemm_grouped's results on repacked groups (same contract as gemm_repacked); nullptr: grouped
  // rows of repacked weights are unrepacked into scratch and go to gemm_grouped.
  GemmFn gemm_grouped_repacked = nullptr;

  // Whether this table has the whole load-time layout (what repacked_rows may use).
  bool has_repacked_layout() const { return repack_rows > 0 && repack && unrepack && gemm_repacked; }
};

// The ops for `type` with the given ISA variant (falls back to a lower ISA where a variant is
// missing); nullptr when the type has no kernels in this build.
const TypeOps* find_type_ops(GgmlType type, Isa isa);
// For active_isa(). Throws baton::UnsupportedError("unsupported type X for tensor Y") when absent.
const TypeOps& require_type_ops(GgmlType type, std::string_view tensor_name);

}  // namespace baton::kernels
