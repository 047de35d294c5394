// The scalar reference of attention for one group of query heads (see attention.h): the
// readable version of the algorithm every SIMD variant follows.
//
// Per head: q rounded to F16; for each chunk of kAttentionChunk positions: scores
// s_j = (q·k_j) · scale (dot summed in f32, in order), chunk max m, new running max
// M' = max(M, m); the accumulator and running sum are rescaled by exp(M − M') when M' > M;
// p_j = exp(s_j − M'), S += Σ p_j (in order), acc += p_j · v_j. Finally out = acc · (1/S).
#include <cmath>

#include "engine/base/fp16.h"
#include "kernels/attention_internal.h"

namespace baton::kernels::scalar {

void attend_group(const AttentionGroup& g) {
  const int64_t D = g.head_dim;
  const size_t dp = static_cast<size_t>((D + 15) / 16 * 16);
  float* qf = g.scratch;                                   // [n_q][dp]
  float* acc = qf + static_cast<size_t>(g.n_q) * dp;       // [n_q][dp]
  float* scores = acc + static_cast<size_t>(g.n_q) * dp;   // [kAttentionChunk]

  for (int64_t h = 0; h < g.n_q; ++h) {
    float* qh = qf + h * dp;
    for (int64_t d = 0; d < D; ++d) qh[d] = fp16_to_fp32(fp32_to_fp16(g.q[h * D + d]));
  }

  for (int64_t h = 0; h < g.n_q; ++h) {
    const float* qh = qf + h * dp;
    float* ah = acc + h * dp;
    for (int64_t d = 0; d < D; ++d) ah[d] = 0.0f;
    float M = -INFINITY, S = 0.0f;

    for (int64_t c0 = 0; c0 < g.n_kv; c0 += kAttentionChunk) {
      const int64_t nc = std::min(kAttentionChunk, g.n_kv - c0);
      float m = -INFINITY;
      for (int64_t j = 0; j < nc; ++j) {
        const uint16_t* kr = g.k + static_cast<size_t>(c0 + j) * g.kv_stride;
        float dot = 0.0f;
        for (int64_t d = 0; d < D; ++d) dot += qh[d] * fp16_to_fp32(kr[d]);
        scores[j] = dot * g.scale;
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
        const uint16_t* vr = g.v + static_cast<size_t>(c0 + j) * g.kv_stride;
        for (int64_t d = 0; d < D; ++d) ah[d] += p * fp16_to_fp32(vr[d]);
      }
    }

    const float inv = 1.0f / S;
    for (int64_t d = 0; d < D; ++d) g.out[h * D + d] = ah[d] * inv;
  }
}

}  // namespace baton::kernels::scalar
