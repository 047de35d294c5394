// Internal to kernels/: the per-ISA op tables, shared tables, and the precondition check.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "kernels/ops/ops.h"

// A broken precondition of our own code (never user input: that is validated where it enters).
// Cheap, always on, and fatal: the message names the check and where it failed.
#define BATON_KERNEL_CHECK(cond)                                                                          \
  do {                                                                                                    \
    if (!(cond)) {                                                                                        \
      std::fprintf(stderr, "baton kernel precondition failed: %s at %s:%d\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                                       \
    }                                                                                                     \
  } while (0)

namespace baton::kernels {

namespace scalar {
extern const OpsTable kOpsTable;
// SwiGLU exactly as ggml_vec_swiglu_f32 of an AVX2 build (ggml_v_silu on groups of 8, libm expf
// on the n mod 8 tail): the definition every ISA's swiglu reproduces bit for bit.
void swiglu_ggml(const float* gate, const float* up, float* y, int64_t n);
// One lane of ggml's AVX2 ggml_v_expf (also used by the tiled attention's softmax); the AVX2
// vector version is avx2::ggml_v_expf (ops_avx2.cpp, declared where it is used: it takes __m256).
float ggml_v_expf1(float x);
}  // namespace scalar
namespace avx2 {
extern const OpsTable kOpsTable;
// scalar::swiglu_ggml with AVX2 (bitwise equal); the AVX-512 table uses it too.
void swiglu_ggml(const float* gate, const float* up, float* y, int64_t n);
// The scalar rope_rotate (ggml's rotate_pairs with FMA contraction) with AVX2, bitwise equal.
void rope_rotate_ggml(const float* cache, float* x, int64_t n_rot, bool neox);
}  // namespace avx2
namespace avx512 {
extern const OpsTable kOpsTable;
}

namespace detail {
// ggml_table_gelu_f16: for every half h, fp16(gelu_tanh(float(h))). Built once, thread-safe.
const uint16_t* gelu_f16_table();
// The GELU of ops.h by table lookup; every ISA's table points here (built for baseline x86-64,
// so no ISA-specific copy of the fp16 helpers is involved).
void gelu_by_table(const float* x, float* y, int64_t n);
}  // namespace detail

}  // namespace baton::kernels
