// Q4_K weights repacked at load into 16-row groups (TypeOps::repack; layout and float order:
// kquant/q4_K_gemm_x16.h): the repack / unrepack permutations and the gemms on the repacked layout,
// per ISA. gemm_q4_k_x16*: n_rows a multiple of 16, w_stride = the dense row bytes; bitwise equal
// to the Q4_K gemm (TypeOps::gemm, llama.cpp's GEMV order) on the rows before repacking.
#pragma once

#include <cstddef>
#include <cstdint>

namespace baton::kernels {

namespace scalar {
// Rows [0, n_rows) (n_rows a multiple of 16, dense rows of k elements) to the repacked layout
// and back; same size, src and dst must not overlap.
void repack_q4_k_x16(const void* src, void* dst, int64_t n_rows, int64_t k);
void unrepack_q4_k_x16(const void* src, void* dst, int64_t n_rows, int64_t k);
// Q5_K: the same contract, layout kquant/q5_K_gemm_x16.h.
void repack_q5_k_x16(const void* src, void* dst, int64_t n_rows, int64_t k);
void unrepack_q5_k_x16(const void* src, void* dst, int64_t n_rows, int64_t k);
// Q5_K for AVX2: the same contract, layout kquant/q5_K_gemm_x16p_avx2.cpp.
void repack_q5_k_x16p(const void* src, void* dst, int64_t n_rows, int64_t k);
void unrepack_q5_k_x16p(const void* src, void* dst, int64_t n_rows, int64_t k);
}  // namespace scalar

namespace avx512 {
void gemm_q4_k_x16(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                   int64_t n_tok, float* out, size_t out_stride);
// With AVX512-VNNI dpbusd (same integer sums): only where has_avx512_vnni().
void gemm_q4_k_x16_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                        int64_t n_tok, float* out, size_t out_stride);
// Q4_K's grouped order (TypeOps::gemm_grouped) on repacked groups: bitwise gemm_q4_k_grouped on
// the plain rows.
void gemm_q4_k_x16_grouped(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
                           size_t a_stride, int64_t n_tok, float* out, size_t out_stride);
void gemm_q4_k_x16_grouped_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
                                size_t a_stride, int64_t n_tok, float* out, size_t out_stride);
// Q5_K repacked (kquant/q5_K_gemm_x16.h), bitwise the Q5_K gemm (llama.cpp's vec_dot lanes order).
void gemm_q5_k_x16(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                   int64_t n_tok, float* out, size_t out_stride);
void gemm_q5_k_x16_vnni(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                        int64_t n_tok, float* out, size_t out_stride);
}  // namespace avx512

// Q5_K in the x16p layout (kquant/q5_K_gemm_x16p_avx2.cpp), bitwise the Q5_K gemm; avxvnni: the same code
// built with AVX-VNNI (simd256_tier.h).
namespace avx2 {
void gemm_q5_k_x16p(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                   int64_t n_tok, float* out, size_t out_stride);
}  // namespace avx2
namespace avxvnni {
void gemm_q5_k_x16p(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                   int64_t n_tok, float* out, size_t out_stride);
}  // namespace avxvnni

}  // namespace baton::kernels
