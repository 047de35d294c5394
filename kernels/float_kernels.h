// Kernels of the float formats F32, F16 and BF16, one function per (op, type, ISA). A float
// weight type multiplies activations converted to the same type (llama.cpp's vec_dot_type):
// F16 x F16 and BF16 x BF16 products are summed in f32. scalar:: is the reference (it sums in
// double); avx2:: and avx512:: convert bit-identically to it and agree on gemm within float
// rounding. Signatures are those of ToFloatFn / FromFloatFn / GemmFn (type_ops.h). Rows of
// any length k >= 1; no alignment is assumed anywhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace baton::kernels {

#define BATON_FLOAT_KERNELS_DECL                                                               \
  void f16_to_float(const void* src, float* dst, int64_t n);                                   \
  void bf16_to_float(const void* src, float* dst, int64_t n);                                  \
  void float_to_f16(const float* src, void* dst, int64_t n);                                   \
  void float_to_bf16(const float* src, void* dst, int64_t n);                                  \
  void gemm_f32(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,      \
                size_t a_stride, int64_t n_tok, float* out, size_t out_stride);                \
  void gemm_f16(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,      \
                size_t a_stride, int64_t n_tok, float* out, size_t out_stride);                \
  void gemm_bf16(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,     \
                 size_t a_stride, int64_t n_tok, float* out, size_t out_stride);

namespace scalar {
BATON_FLOAT_KERNELS_DECL
// F32 needs no conversion: these copy (the same for every ISA).
void copy_f32(const float* src, void* dst, int64_t n);
void f32_to_float(const void* src, float* dst, int64_t n);
}  // namespace scalar

namespace avx2 {
BATON_FLOAT_KERNELS_DECL
}  // namespace avx2

namespace avx512 {
BATON_FLOAT_KERNELS_DECL
}  // namespace avx512

#undef BATON_FLOAT_KERNELS_DECL

}  // namespace baton::kernels
