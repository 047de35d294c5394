// The scalar reference of attention for a range of query heads of one query (see attention.h):
// the readable version of the algorithm every SIMD variant follows (one head at a time here).
//
// Per head: q rounded to F16; for each chunk of kAttentionChunk positions: scores
// s_j = (q·k_j) · scale (dot summed in f32, in order), chunk max m, new running max
// M' = max(M, m); the accumulator and running sum are rescaled by exp(M − M') when M' > M;
// p_j = exp(s_j − M'), S += Σ p_j (in order), acc += p_j · v_j. Finally out = acc · (1/S).
#include <algorithm>
#include <cmath>

#include "engine/base/fp16.h"
#include "kernels/attention_internal.h"

namespace baton::kernels::scalar {

void attend(const AttentionTask& t) {
  const int64_t D = t.head_dim;
  float* qh = t.scratch;          // [D]
  float* ah = qh + D;             // [D]
  float* scores = ah + D;         // [kAttentionChunk]

  for (int64_t h = t.h0; h < t.h1; ++h) {
    for (int64_t d = 0; d < D; ++d) qh[d] = fp16_to_fp32(fp32_to_fp16(t.q[h * D + d]));
    const uint16_t* k = t.k + (h / t.group) * D;  // this head's KV head at position 0
    const uint16_t* v = t.v + (h / t.group) * D;
    for (int64_t d = 0; d < D; ++d) ah[d] = 0.0f;
    float M = -INFINITY, S = 0.0f;

    for (int64_t c0 = 0; c0 < t.n_kv; c0 += kAttentionChunk) {
      const int64_t nc = std::min(kAttentionChunk, t.n_kv - c0);
      float m = -INFINITY;
      for (int64_t j = 0; j < nc; ++j) {
        const uint16_t* kr = k + static_cast<size_t>(c0 + j) * t.kv_stride;
        float dot = 0.0f;
        for (int64_t d = 0; d < D; ++d) dot += qh[d] * fp16_to_fp32(kr[d]);
        scores[j] = dot * t.scale;
        m = std::fmax(m, scores[j]);
      }
      const float M_new = std::fmax(M, m);
      if (M_new > M) {
        const float alpha = std::exp(M - M_new);
        S *= alpha;
        for (int64_t d = 0; d < D; ++d) ah[d] *= alpha;
        M = M_new;
      }
      for (int64_t j = 0; j < nc; ++j) {
        const float p = std::exp(scores[j] - M);
        S += p;
        const uint16_t* vr = v + static_cast<size_t>(c0 + j) * t.kv_stride;
        for (int64_t d = 0; d < D; ++d) ah[d] += p * fp16_to_fp32(vr[d]);
      }
    }

    const float inv = 1.0f / S;
    for (int64_t d = 0; d < D; ++d) t.out[h * D + d] = ah[d] * inv;
  }
}

}  // namespace baton::kernels::scalar
