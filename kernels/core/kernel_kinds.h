// One function type per kernel kind. Every family declares its kernels with these
// (`GemmKernel gemm_q4_0, gemm_q8_0;`), and TypeOps (core/type_ops.h) holds pointers to them, so a
// signature is spelled once here and a kernel that does not match its kind fails to compile.
#pragma once

#include <cstddef>
#include <cstdint>

namespace baton::kernels {

// Dequantizes n elements (a multiple of the block size) to f32.
using ToFloatKernel = void(const void* src, float* dst, int64_t n);
// Quantizes n elements (a multiple of the block size) from f32.
using FromFloatKernel = void(const float* src, void* dst, int64_t n);
// out[t * out_stride + r] = dot(w row r, a row t) for r < n_rows, t < n_tok: the contract of
// TypeOps::gemm (core/type_ops.h).
using GemmKernel = void(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                        int64_t n_tok, float* out, size_t out_stride);
// Dense rows [0, n_rows) (n_rows a multiple of the layout's group) to a load-time layout or
// back; same size, src and dst must not overlap.
using RepackKernel = void(const void* src, void* dst, int64_t n_rows, int64_t k);

}  // namespace baton::kernels
