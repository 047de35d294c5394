// Kernels of the legacy block formats (Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1), one function per
// (op, type, ISA). scalar:: is the readable reference and the oracle of the tests; avx2:: and
// avx512:: must dequantize and quantize bit-identically to it and compute gemm within float
// rounding of it. Signatures are those of ToFloatFn / FromFloatFn / GemmFn (type_ops.h).
//
// Activation quantizers (quantize_q8_0 / quantize_q8_1) reproduce llama.cpp's runtime x86
// quantize_row_q8_0/q8_1: per block amax, d = amax/127 stored as f16, q = round-half-even(x *
// (127/amax)), and for Q8_1 s = f16(d * sum(q)). Weight quantizers reproduce llama.cpp's
// quantize_row_*_ref (what llama-quantize writes without an importance matrix).
#pragma once

#include <cstddef>
#include <cstdint>

namespace baton::kernels {

#define BATON_LEGACY_KERNELS_DECL                                                              \
  void dequantize_q4_0(const void* src, float* dst, int64_t n);                                \
  void dequantize_q4_1(const void* src, float* dst, int64_t n);                                \
  void dequantize_q5_0(const void* src, float* dst, int64_t n);                                \
  void dequantize_q5_1(const void* src, float* dst, int64_t n);                                \
  void dequantize_q8_0(const void* src, float* dst, int64_t n);                                \
  void dequantize_q8_1(const void* src, float* dst, int64_t n);                                \
  void quantize_q8_0(const float* src, void* dst, int64_t n);                                  \
  void quantize_q8_1(const float* src, void* dst, int64_t n);                                  \
  void gemm_q4_0(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,     \
                 size_t a_stride, int64_t n_tok, float* out, size_t out_stride);               \
  void gemm_q4_1(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,     \
                 size_t a_stride, int64_t n_tok, float* out, size_t out_stride);               \
  void gemm_q5_0(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,     \
                 size_t a_stride, int64_t n_tok, float* out, size_t out_stride);               \
  void gemm_q5_1(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,     \
                 size_t a_stride, int64_t n_tok, float* out, size_t out_stride);               \
  void gemm_q8_0(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,     \
                 size_t a_stride, int64_t n_tok, float* out, size_t out_stride);

namespace scalar {
BATON_LEGACY_KERNELS_DECL
// Weight quantizers, identical to llama.cpp's quantize_row_{q4_0,q4_1,q5_0,q5_1,q8_0}_ref.
// quantize_q8_0_ref differs from the activation quantizer quantize_q8_0 only in how it
// rounds (1/d and roundf, as llama-quantize does); results differ in rare last-ulp cases.
void quantize_q4_0_ref(const float* src, void* dst, int64_t n);
void quantize_q4_1_ref(const float* src, void* dst, int64_t n);
void quantize_q5_0_ref(const float* src, void* dst, int64_t n);
void quantize_q5_1_ref(const float* src, void* dst, int64_t n);
void quantize_q8_0_ref(const float* src, void* dst, int64_t n);
// Q4_0 rows [0, n_rows) (n_rows a multiple of 16, dense rows of k elements) into the 16-row
// groups of gemm_q4_0_x16 (layout: block32/q4_0_gemm_x16.h); same size, src and dst must not overlap.
void repack_q4_0_x16(const void* src, void* dst, int64_t n_rows, int64_t k);
void unrepack_q4_0_x16(const void* src, void* dst, int64_t n_rows, int64_t k);  // the inverse
}  // namespace scalar

// gemm_q4_0_x16: the Q4_0 gemm on repacked weights (n_rows a multiple of 16, w_stride = the
// dense row bytes); bitwise equal to gemm_q4_0 on the rows before repacking.
#define BATON_Q4_0_X16_DECL(SUFFIX)                                                                      \
  void gemm_q4_0_x16##SUFFIX(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, \
                             size_t a_stride, int64_t n_tok, float* out, size_t out_stride);

namespace avx2 {
BATON_LEGACY_KERNELS_DECL
BATON_Q4_0_X16_DECL()
}  // namespace avx2

// The AVX2 gemms built with AVX-VNNI (simd256_tier.h: vpdpbusd, the same int32 lanes); the
// AVX-VNNI tier converts with avx2::'s functions.
namespace avxvnni {
void gemm_q4_0(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
               int64_t n_tok, float* out, size_t out_stride);
void gemm_q4_1(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
               int64_t n_tok, float* out, size_t out_stride);
void gemm_q5_0(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
               int64_t n_tok, float* out, size_t out_stride);
void gemm_q5_1(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
               int64_t n_tok, float* out, size_t out_stride);
void gemm_q8_0(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
               int64_t n_tok, float* out, size_t out_stride);
BATON_Q4_0_X16_DECL()
}  // namespace avxvnni

namespace avx512 {
BATON_LEGACY_KERNELS_DECL
BATON_Q4_0_X16_DECL()
BATON_Q4_0_X16_DECL(_vnni)
// The same gemms using AVX512-VNNI dpbusd (same int32 sums, so bitwise the same results);
// only for CPUs where has_avx512_vnni().
void gemm_q4_0_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
                    size_t a_stride, int64_t n_tok, float* out, size_t out_stride);
void gemm_q4_1_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
                    size_t a_stride, int64_t n_tok, float* out, size_t out_stride);
void gemm_q5_0_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
                    size_t a_stride, int64_t n_tok, float* out, size_t out_stride);
void gemm_q5_1_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
                    size_t a_stride, int64_t n_tok, float* out, size_t out_stride);
void gemm_q8_0_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
                    size_t a_stride, int64_t n_tok, float* out, size_t out_stride);
}  // namespace avx512

#undef BATON_LEGACY_KERNELS_DECL
#undef BATON_Q4_0_X16_DECL

}  // namespace baton::kernels
