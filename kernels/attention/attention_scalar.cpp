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
//
// Tiled mode (llama.cpp's ggml_compute_forward_flash_attn_ext_tiled, one query row; its other
// rows in the Q tile do not change this row's arithmetic): M = -inf, S = 0, f32 VKQ = 0; for each
// tile of 64 positions [b, b+64) from position 0 (positions >= n_kv masked, score -inf):
//   kq[i] = (fma chain over d of k[d]·q[d], from 0) · scale + 0 (the mask)   (q in f32)
//   tile_max = max_i kq[i];  M_new = fmax(M, tile_max)
//   if M_new > M: ms = expf(M - M_new), VKQ *= ms, S *= ms
//   M = M_new;  kq[i] = ggml_v_expf(kq[i] - M) in groups of 8, each group's sum (hsum tree)
//   added to a double, S = f32(S + that double)
//   VKQ[d] = fma(v_i[d], kq[i], VKQ[d]) over the visible positions i in order
// finally out = VKQ · (1 / S).
#include <algorithm>
#include <cmath>

#include "engine/base/fp16.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_internal.h"
#include "kernels/ops/ops_internal.h"

namespace baton::kernels::scalar {

float softmax_group8(float* x, float max) {
  for (int l = 0; l < 8; ++l) x[l] = ggml_v_expf1(x[l] - max);
  return ((x[0] + x[4]) + (x[2] + x[6])) + ((x[1] + x[5]) + (x[3] + x[7]));
}

void attend_tiled(const AttentionTask& t) {
  const int64_t D = t.head_dim;
  float kq[kAttentionKvTile];
  float vkq[AttentionShape::kMaxHeadDim];
  for (int64_t h = t.h0; h < t.h1; ++h) {
    const float* q = t.q + h * D;
    const uint16_t* k = t.k + (h / t.group) * D;
    const uint16_t* v = t.v + (h / t.group) * D;
    for (int64_t d = 0; d < D; ++d) vkq[d] = 0.0f;
    float M = -INFINITY, S = 0.0f;
    for (int64_t base = 0; base < t.n_kv; base += kAttentionKvTile) {
      const int64_t cnt = std::min(kAttentionKvTile, t.n_kv - base);
      for (int64_t i = 0; i < kAttentionKvTile; ++i) {
        if (i >= cnt) {
          kq[i] = -INFINITY;
          continue;
        }
        const uint16_t* kr = k + static_cast<size_t>(base + i) * t.kv_stride;
        float acc = 0.0f;
        for (int64_t d = 0; d < D; ++d) acc = std::fma(fp16_to_fp32(kr[d]), q[d], acc);
        kq[i] = acc * t.scale + 0.0f;
      }
      float tile_max = -INFINITY;
      for (int64_t i = 0; i < kAttentionKvTile; ++i) tile_max = tile_max > kq[i] ? tile_max : kq[i];
      if (tile_max == -INFINITY) continue;
      const float m_new = std::fmax(M, tile_max);
      if (m_new > M) {
        const float ms = std::exp(M - m_new);
        for (int64_t d = 0; d < D; ++d) vkq[d] *= ms;
        S *= ms;
      }
      M = m_new;
      double sum = 0.0;
      for (int64_t g = 0; g < kAttentionKvTile; g += 8) sum += static_cast<double>(softmax_group8(kq + g, M));
      S = static_cast<float>(static_cast<double>(S) + sum);
      for (int64_t i = 0; i < cnt; ++i) {
        const uint16_t* vr = v + static_cast<size_t>(base + i) * t.kv_stride;
        for (int64_t d = 0; d < D; ++d) vkq[d] = std::fma(fp16_to_fp32(vr[d]), kq[i], vkq[d]);
      }
    }
    const float inv = S == 0.0f ? 0.0f : 1.0f / S;
    for (int64_t d = 0; d < D; ++d) t.out[h * D + d] = vkq[d] * inv;
  }
}

void attend(const AttentionTask& t) {
  if (t.tiled) return attend_tiled(t);
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
