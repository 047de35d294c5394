// Scalar reference of the "8-lane" K-quant gemm order (Q2_K, Q3_K, Q6_K), the arithmetic of
// llama.cpp's AVX2 ggml_vec_dot_{q2,q3,q6}_K_q8_K (the CPU build the golden outputs came from).
// Included by kquant/q6_K_ops_scalar.cpp and kquant/q23_K_ops_scalar.cpp only. The definition, per weight row w and
// Q8_K activation row a, with q(e) the format's signed quant of element e (Q6_K: see below,
// Q3_K: q - 4, Q2_K: q in 0..3) and sc(s) the scale of 16-element sub-block s (Q3_K: sc - 32,
// Q2_K: low nibble), min(s) the Q2_K sub-block min (high nibble):
//   acc[0..7] = 0
//   for each super-block b, in order:
//     lane[L] = sum over the 8 chunks c of 32 elements of sc((32c + 4L) / 16) *
//               sum_{i<4} q(32c + 4L + i) * a.qs[32c + 4L + i]                 (exact int32)
//     Q6_K only: q is the unsigned quant (0..63) in the line above, and then
//           lane[L] -= 32 * (sc(2L) * a.bsums[2L] + sc(2L + 1) * a.bsums[2L + 1])
//     Q2_K: mins[L] = min(2L) * a.bsums[2L] + min(2L + 1) * a.bsums[2L + 1]     (exact int32)
//           acc[L] = fma((-a.d) * f16(w.dmin), float(mins[L]), acc[L])
//     acc[L] = fma(a.d * f16(w.d), float(lane[L]), acc[L])
//   result = ((acc0 + acc4) + (acc2 + acc6)) + ((acc1 + acc5) + (acc3 + acc7))
// Every SIMD variant (kquant/qx_K_gemm_lanes.h) computes exactly these float operations.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/kquant/qx_K_scalar.h"

namespace baton::kernels::scalar {
namespace {

// The integer lanes of one super-block and its two float multipliers (dmin only for Q2_K).
struct LaneDot {
  int32_t lane[8] = {};
  int32_t mins[8] = {};
  float d = 0.0f;
  float dmin = 0.0f;
};

// llama.cpp's hsum_float_8: high half + low half, then pairs, then the two left.
inline float hsum8_lanes(const float (&v)[8]) {
  const float s0 = v[0] + v[4], s1 = v[1] + v[5], s2 = v[2] + v[6], s3 = v[3] + v[7];
  return (s0 + s2) + (s1 + s3);
}

// QuantFn: int (const uint8_t* w_block, int e) = q(e); ScaleFn: int (const uint8_t* w_block, int s).
template <class QuantFn, class ScaleFn>
void lane_sums(const uint8_t* w, const Q8KView& a, QuantFn quant, ScaleFn scale, int32_t (&lane)[8]) {
  for (int L = 0; L < 8; ++L) {
    int32_t sum = 0;
    for (int c = 0; c < 8; ++c) {
      const int e0 = 32 * c + 4 * L;
      int32_t dot4 = 0;
      for (int i = 0; i < 4; ++i) dot4 += quant(w, e0 + i) * a.qs[e0 + i];
      sum += scale(w, e0 / 16) * dot4;
    }
    lane[L] = sum;
  }
}

// out[t * out_stride + r] for every row and token, in the order above. DotFn: LaneDot (w_block, a_block).
template <int kBlockBytes, bool kHasMins, class DotFn>
void gemm_lanes_reference(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                          int64_t n_tok, float* out, size_t out_stride, DotFn dot) {
  const int64_t nb = k / kQK_K;
  for (int64_t t = 0; t < n_tok; ++t) {
    const uint8_t* a_row = static_cast<const uint8_t*>(a) + static_cast<size_t>(t) * a_stride;
    for (int64_t r = 0; r < n_rows; ++r) {
      const uint8_t* w_row = static_cast<const uint8_t*>(w) + static_cast<size_t>(r) * w_stride;
      float acc[8] = {};
      for (int64_t b = 0; b < nb; ++b) {
        const Q8KView ab(a_row + b * static_cast<int64_t>(sizeof(BlockQ8K)));
        const LaneDot p = dot(w_row + b * kBlockBytes, ab);
        const float d = ab.d * p.d;
        if constexpr (kHasMins) {
          const float dmin = -ab.d * p.dmin;
          for (int L = 0; L < 8; ++L) acc[L] = std::fma(dmin, static_cast<float>(p.mins[L]), acc[L]);
        }
        for (int L = 0; L < 8; ++L) acc[L] = std::fma(d, static_cast<float>(p.lane[L]), acc[L]);
      }
      out[static_cast<size_t>(t) * out_stride + static_cast<size_t>(r)] = hsum8_lanes(acc);
    }
  }
}

}  // namespace
}  // namespace baton::kernels::scalar
