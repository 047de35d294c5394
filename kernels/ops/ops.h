// Elementwise and row operations of the transformer block, numerically like ggml's CPU ops.
//
// Every op has a scalar reference and AVX2 / AVX-512 variants behind one table per ISA; the
// entry functions use the table of active_isa(). Reductions (rms_norm, softmax) run in a fixed
// order that depends only on n, never on a batch or a thread split, so a row's result is the
// same alone or batched. Variants of different ISAs may differ in the last bits where they use
// a vector exp (softmax, silu, swiglu); the scalar reference uses libm. The ops never throw and
// never allocate; callers guarantee the sizes (n >= 0, buffers of n elements).
#pragma once

#include <cstdint>

#include "kernels/core/isa.h"

namespace baton::kernels {

// y = x / sqrt(mean(x²) + eps) * weight (weight may be nullptr: no multiply). The sum of
// squares is taken in double like ggml's ggml_float; y may alias x.
void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps);
// y = softmax(x): exp(x - max) / sum, the sum in double; y may alias x.
void softmax(const float* x, float* y, int64_t n);
// y = x / (1 + exp(-x)) (SiLU); y may alias x.
void silu(const float* x, float* y, int64_t n);
// y = silu(gate) * up (the SwiGLU feed-forward gate); y may alias gate or up.
void swiglu(const float* gate, const float* up, float* y, int64_t n);
// GELU, tanh approximation, as ggml computes it by default (GGML_GELU_FP16): inputs rounded
// to f16 and looked up in a table of 0.5x(1 + tanh(√(2/π)x(1 + 0.044715x²))); x <= -10 gives
// 0, x >= 10 gives x. y may alias x.
void gelu(const float* x, float* y, int64_t n);
// y = a + b; y = a * b; y = x * s. y may alias an input.
void add(const float* a, const float* b, float* y, int64_t n);
void mul(const float* a, const float* b, float* y, int64_t n);
void scale(const float* x, float s, float* y, int64_t n);
// IEEE half conversions, round to nearest even (bit-identical to baton::fp32_to_fp16 for
// every non-NaN input).
void f32_to_f16(const float* x, uint16_t* y, int64_t n);
void f16_to_f32(const uint16_t* x, float* y, int64_t n);

// The per-ISA implementations behind the entry functions (tests and benchmarks compare them).
struct OpsTable {
  Isa isa;
  void (*rms_norm)(const float* x, const float* weight, float* y, int64_t n, float eps);
  void (*softmax)(const float* x, float* y, int64_t n);
  void (*silu)(const float* x, float* y, int64_t n);
  void (*swiglu)(const float* gate, const float* up, float* y, int64_t n);
  void (*gelu)(const float* x, float* y, int64_t n);
  void (*add)(const float* a, const float* b, float* y, int64_t n);
  void (*mul)(const float* a, const float* b, float* y, int64_t n);
  void (*scale)(const float* x, float s, float* y, int64_t n);
  void (*f32_to_f16)(const float* x, uint16_t* y, int64_t n);
  void (*f16_to_f32)(const uint16_t* x, float* y, int64_t n);
  // Rotates pairs of x by the angles in cache (see ops_rope.h): neox = false pairs (2i, 2i+1),
  // neox = true pairs (i, i + n_rot/2). cache holds cos[n_rot/2] then sin[n_rot/2].
  void (*rope_rotate)(const float* cache, float* x, int64_t n_rot, bool neox);
};

// The table for `isa` (exactly that ISA; the caller checks the CPU supports it).
const OpsTable& ops_table(Isa isa);
// ops_table(active_isa()).
const OpsTable& active_ops();

}  // namespace baton::kernels
