// AVX-512 attention for one group of query heads (built with -march=x86-64-v4); the algorithm
// of attention_scalar.cpp with 16-lane f32 dot products, avx512::exp_ps, and the group's query
// heads sharing each chunk of K/V rows while it is in L1. Head dims that are not a multiple of
// 16 use masked loads. No inline library functions here (see ops_avx2.cpp).
#include <immintrin.h>

#include "kernels/attention_internal.h"
#include "kernels/ops_math_avx512.h"

namespace baton::kernels::avx512 {
namespace {

__mmask16 lanes(int64_t rem) { return rem >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << rem) - 1); }

__m512 load_f16(const uint16_t* p, __mmask16 m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }

float exp1(float x) { return _mm_cvtss_f32(_mm512_castps512_ps128(exp_ps(_mm512_set1_ps(x)))); }

// scores[j] = (q · k_{c0+j}) · scale for j < nc; four positions at a time, each its own
// accumulator chain (the per-position arithmetic does not depend on that grouping).
void chunk_scores(const AttentionGroup& g, const float* qh, int64_t c0, int64_t nc, float* scores) {
  const int64_t D = g.head_dim;
  int64_t j = 0;
  for (; j + 4 <= nc; j += 4) {
    const uint16_t* k0 = g.k + static_cast<size_t>(c0 + j) * g.kv_stride;
    const uint16_t* k1 = k0 + g.kv_stride;
    const uint16_t* k2 = k1 + g.kv_stride;
    const uint16_t* k3 = k2 + g.kv_stride;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
    for (int64_t d = 0; d < D; d += 16) {
      const __mmask16 m = lanes(D - d);
      const __m512 q = _mm512_load_ps(qh + d);
      a0 = _mm512_fmadd_ps(q, load_f16(k0 + d, m), a0);
      a1 = _mm512_fmadd_ps(q, load_f16(k1 + d, m), a1);
      a2 = _mm512_fmadd_ps(q, load_f16(k2 + d, m), a2);
      a3 = _mm512_fmadd_ps(q, load_f16(k3 + d, m), a3);
    }
    scores[j + 0] = hsum_ps(a0) * g.scale;
    scores[j + 1] = hsum_ps(a1) * g.scale;
    scores[j + 2] = hsum_ps(a2) * g.scale;
    scores[j + 3] = hsum_ps(a3) * g.scale;
  }
  for (; j < nc; ++j) {
    const uint16_t* k0 = g.k + static_cast<size_t>(c0 + j) * g.kv_stride;
    __m512 a0 = _mm512_setzero_ps();
    for (int64_t d = 0; d < D; d += 16) a0 = _mm512_fmadd_ps(_mm512_load_ps(qh + d), load_f16(k0 + d, lanes(D - d)), a0);
    scores[j] = hsum_ps(a0) * g.scale;
  }
}

// acc[d0 .. d0 + 16·NB) += Σ_j p_j · v_{c0+j}[...], the accumulators held in registers.
template <int NB>
void accumulate_v(const AttentionGroup& g, const float* p, int64_t c0, int64_t nc, int64_t d0, float* acc) {
  __m512 a[NB];
  __mmask16 m[NB];
  for (int b = 0; b < NB; ++b) {
    a[b] = _mm512_load_ps(acc + d0 + 16 * b);
    m[b] = lanes(g.head_dim - d0 - 16 * b);
  }
  for (int64_t j = 0; j < nc; ++j) {
    const uint16_t* vr = g.v + static_cast<size_t>(c0 + j) * g.kv_stride + d0;
    const __m512 pj = _mm512_set1_ps(p[j]);
    for (int b = 0; b < NB; ++b) a[b] = _mm512_fmadd_ps(pj, load_f16(vr + 16 * b, m[b]), a[b]);
  }
  for (int b = 0; b < NB; ++b) _mm512_store_ps(acc + d0 + 16 * b, a[b]);
}

void accumulate_v_any(const AttentionGroup& g, const float* p, int64_t c0, int64_t nc, float* acc) {
  const int64_t n_vec = (g.head_dim + 15) / 16;
  for (int64_t b0 = 0; b0 < n_vec; b0 += 8) {
    const int64_t d0 = b0 * 16;
    switch (n_vec - b0 >= 8 ? 8 : n_vec - b0) {
      case 1: accumulate_v<1>(g, p, c0, nc, d0, acc); break;
      case 2: accumulate_v<2>(g, p, c0, nc, d0, acc); break;
      case 3: accumulate_v<3>(g, p, c0, nc, d0, acc); break;
      case 4: accumulate_v<4>(g, p, c0, nc, d0, acc); break;
      case 5: accumulate_v<5>(g, p, c0, nc, d0, acc); break;
      case 6: accumulate_v<6>(g, p, c0, nc, d0, acc); break;
      case 7: accumulate_v<7>(g, p, c0, nc, d0, acc); break;
      default: accumulate_v<8>(g, p, c0, nc, d0, acc); break;
    }
  }
}

}  // namespace

void attend_group(const AttentionGroup& g) {
  const int64_t D = g.head_dim;
  const size_t dp = static_cast<size_t>((D + 15) / 16 * 16);
  float* qf = g.scratch;                                      // [n_q][dp]
  float* acc = qf + static_cast<size_t>(g.n_q) * dp;          // [n_q][dp]
  float* scores = acc + static_cast<size_t>(g.n_q) * dp;     // [n_q][kAttentionChunk]
  float* M = scores + static_cast<size_t>(g.n_q) * kAttentionChunk;  // [n_q]
  float* S = M + g.n_q;                                       // [n_q]

  for (int64_t h = 0; h < g.n_q; ++h) {
    for (int64_t d = 0; d < D; d += 16) {
      const __mmask16 m = lanes(D - d);
      const __m512 q = _mm512_maskz_loadu_ps(m, g.q + h * D + d);
      const __m512 q16 = _mm512_cvtph_ps(_mm512_cvtps_ph(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      _mm512_store_ps(qf + h * dp + d, q16);
      _mm512_store_ps(acc + h * dp + d, _mm512_setzero_ps());
    }
    M[h] = -__builtin_inff();
    S[h] = 0.0f;
  }

  for (int64_t c0 = 0; c0 < g.n_kv; c0 += kAttentionChunk) {
    const int64_t nc = g.n_kv - c0 < kAttentionChunk ? g.n_kv - c0 : kAttentionChunk;
    for (int64_t h = 0; h < g.n_q; ++h) {
      float* sh = scores + h * kAttentionChunk;
      float* ah = acc + h * dp;
      chunk_scores(g, qf + h * dp, c0, nc, sh);

      __m512 vmax = _mm512_set1_ps(-__builtin_inff());
      for (int64_t j = 0; j < nc; j += 16)
        vmax = _mm512_max_ps(vmax, _mm512_mask_loadu_ps(_mm512_set1_ps(-__builtin_inff()), lanes(nc - j), sh + j));
      const float m = _mm512_reduce_max_ps(vmax);
      if (m > M[h]) {
        const float alpha = exp1(M[h] - m);
        S[h] *= alpha;
        const __m512 va = _mm512_set1_ps(alpha);
        for (size_t d = 0; d < dp; d += 16) _mm512_store_ps(ah + d, _mm512_mul_ps(_mm512_load_ps(ah + d), va));
        M[h] = m;
      }
      const __m512 vm = _mm512_set1_ps(M[h]);
      __m512 psum = _mm512_setzero_ps();
      for (int64_t j = 0; j < nc; j += 16) {
        const __mmask16 mk = lanes(nc - j);
        const __m512 p = _mm512_maskz_mov_ps(mk, exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, sh + j), vm)));
        _mm512_mask_storeu_ps(sh + j, mk, p);
        psum = _mm512_add_ps(psum, p);
      }
      S[h] += hsum_ps(psum);
      accumulate_v_any(g, sh, c0, nc, ah);
    }
  }

  for (int64_t h = 0; h < g.n_q; ++h) {
    const __m512 inv = _mm512_set1_ps(1.0f / S[h]);
    for (int64_t d = 0; d < D; d += 16)
      _mm512_mask_storeu_ps(g.out + h * D + d, lanes(D - d), _mm512_mul_ps(_mm512_load_ps(acc + h * dp + d), inv));
  }
}

}  // namespace baton::kernels::avx512
