// The scalar reference of attention for a range of query heads of one query (see attention.h):
// the exact operation sequence every SIMD variant reproduces bit for bit.
//
// Per head (llama.cpp's flash_attn_ext_f16_one_chunk, see docs/NUMERICS.md): q rounded to F16;
// an F16 accumulator V16 = 0, M = -inf, S = 0; for each position j in order:
//   s = dot_f16(q16, k_j) · scale                         (dot order: attention_dot_f16)
//   if s > M: ms = expf(M - s), M = s, V16 = f16(V16 · ms) elementwise, vs = 1
//   else:     ms = 1, vs = expf(s - M)
//   V16 = f16(fma(v_j, vs, V16)) elementwise;  S = fma(S, ms, vs) (ggml's S*ms + vs, FMA-contracted)
// finally out = f32(V16) · (1 / S).
#include <cmath>

#include "engine/base/fp16.h"
#include "kernels/attention.h"
#include "kernels/attention_internal.h"

namespace baton::kernels::scalar {

void attend(const AttentionTask& t) {
  const int64_t D = t.head_dim;
  uint16_t q16[AttentionShape::kMaxHeadDim];
  uint16_t v16[AttentionShape::kMaxHeadDim];

  for (int64_t h = t.h0; h < t.h1; ++h) {
    for (int64_t d = 0; d < D; ++d) q16[d] = fp32_to_fp16(t.q[h * D + d]);
    const uint16_t* k = t.k + (h / t.group) * D;  // this head's KV head at position 0
    const uint16_t* v = t.v + (h / t.group) * D;
    for (int64_t d = 0; d < D; ++d) v16[d] = 0;
    float M = -INFINITY, S = 0.0f;

    for (int64_t j = 0; j < t.n_kv; ++j) {
      const uint16_t* kr = k + static_cast<size_t>(j) * t.kv_stride;
      const uint16_t* vr = v + static_cast<size_t>(j) * t.kv_stride;
      const float s = attention_dot_f16(q16, kr, D) * t.scale;
      float ms = 1.0f, vs = 1.0f;
      if (s > M) {
        ms = std::exp(M - s);
        M = s;
        for (int64_t d = 0; d < D; ++d) v16[d] = fp32_to_fp16(fp16_to_fp32(v16[d]) * ms);
      } else {
        vs = std::exp(s - M);
      }
      for (int64_t d = 0; d < D; ++d) v16[d] = fp32_to_fp16(std::fma(fp16_to_fp32(vr[d]), vs, fp16_to_fp32(v16[d])));
      S = std::fma(S, ms, vs);
    }

    const float inv = S == 0.0f ? 0.0f : 1.0f / S;
    for (int64_t d = 0; d < D; ++d) t.out[h * D + d] = fp16_to_fp32(v16[d]) * inv;
  }
}

}  // namespace baton::kernels::scalar
