// Token-parallel K-quant gemms of the AVX-VNNI tier (256-bit vpdpbusd, no AVX-512), for prompt
// batches. Signatures are GemmFn's (type_ops.h). Other token counts run the tier's row
// kernels (avxvnni::gemm_q4_k / gemm_q4_k_grouped) where those win (q4_K_lanes_avxvnni.cpp says
// which token counts); every shape returns the scalar bits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace baton::kernels::avxvnni {

// Q4_K in gemm_q4_k's order (kquant_kernels.h: the split chains per super-block).
void gemm_q4_k_lanes(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                     int64_t n_tok, float* out, size_t out_stride);
// Q4_K in gemm_q4_k_grouped's order (one step per pair of sub-blocks).
void gemm_q4_k_grouped_lanes(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                             int64_t n_tok, float* out, size_t out_stride);

}  // namespace baton::kernels::avxvnni
