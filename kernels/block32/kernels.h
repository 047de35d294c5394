// Kernels of the legacy block formats (Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1), one function per
// (op, type, ISA). scalar:: is the readable reference and the oracle of the tests; avx2:: and
// avx512:: must dequantize and quantize bit-identically to it and compute gemm within float
// rounding of it. Declared through the kernel kinds of core/kernel_kinds.h.
//
// Activation quantizers (quantize_q8_0 / quantize_q8_1) reproduce llama.cpp's runtime x86
// quantize_row_q8_0/q8_1: per block amax, d = amax/127 stored as f16, q = round-half-even(x *
// (127/amax)), and for Q8_1 s = f16(d * sum(q)). Weight quantizers reproduce llama.cpp's
// quantize_row_*_ref (what llama-quantize writes without an importance matrix).
#pragma once

#include "kernels/core/kernel_kinds.h"

namespace baton::kernels {

namespace scalar {
ToFloatKernel dequantize_q4_0, dequantize_q4_1, dequantize_q5_0, dequantize_q5_1, dequantize_q8_0, dequantize_q8_1;
FromFloatKernel quantize_q8_0, quantize_q8_1;
GemmKernel gemm_q4_0, gemm_q4_1, gemm_q5_0, gemm_q5_1, gemm_q8_0;
// Weight quantizers, identical to llama.cpp's quantize_row_{q4_0,q4_1,q5_0,q5_1,q8_0}_ref.
// quantize_q8_0_ref differs from the activation quantizer quantize_q8_0 only in how it
// rounds (1/d and roundf, as llama-quantize does); results differ in rare last-ulp cases.
FromFloatKernel quantize_q4_0_ref, quantize_q4_1_ref, quantize_q5_0_ref, quantize_q5_1_ref, quantize_q8_0_ref;
// Q4_0 rows [0, n_rows) (n_rows a multiple of 16, dense rows of k elements) into the 16-row
// groups of gemm_q4_0_x16 (layout: block32/q4_0_gemm_x16.h) and back.
RepackKernel repack_q4_0_x16, unrepack_q4_0_x16;
}  // namespace scalar

// gemm_q4_0_x16: the Q4_0 gemm on repacked weights (n_rows a multiple of 16, w_stride = the
// dense row bytes); bitwise equal to gemm_q4_0 on the rows before repacking.
namespace avx2 {
ToFloatKernel dequantize_q4_0, dequantize_q4_1, dequantize_q5_0, dequantize_q5_1, dequantize_q8_0, dequantize_q8_1;
FromFloatKernel quantize_q8_0, quantize_q8_1;
GemmKernel gemm_q4_0, gemm_q4_1, gemm_q5_0, gemm_q5_1, gemm_q8_0, gemm_q4_0_x16;
}  // namespace avx2

// The AVX2 gemms (block32/block32_gemm_simd256.inc) built with AVX-VNNI (core/simd256_tier.h:
// vpdpbusd, the same int32 lanes); the AVX-VNNI tier converts with avx2::'s functions.
namespace avxvnni {
GemmKernel gemm_q4_0, gemm_q4_1, gemm_q5_0, gemm_q5_1, gemm_q8_0, gemm_q4_0_x16;
}  // namespace avxvnni

namespace avx512 {
ToFloatKernel dequantize_q4_0, dequantize_q4_1, dequantize_q5_0, dequantize_q5_1, dequantize_q8_0, dequantize_q8_1;
FromFloatKernel quantize_q8_0, quantize_q8_1;
GemmKernel gemm_q4_0, gemm_q4_1, gemm_q5_0, gemm_q5_1, gemm_q8_0, gemm_q4_0_x16;
// The same gemms using AVX512-VNNI dpbusd (same int32 sums, so bitwise the same results);
// only for CPUs where has_avx512_vnni().
GemmKernel gemm_q4_0_vnni, gemm_q4_1_vnni, gemm_q5_0_vnni, gemm_q5_1_vnni, gemm_q8_0_vnni, gemm_q4_0_x16_vnni;
}  // namespace avx512

}  // namespace baton::kernels
