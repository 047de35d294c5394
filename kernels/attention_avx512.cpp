// AVX-512 attention for a range of query heads of one query (built with -march=x86-64-v4): the
// algorithm of attention_scalar.cpp with 16-lane f32 dot products and avx512::exp_ps. Each
// chunk of positions is visited once for all heads; the query heads of one KV head share its
// K/V rows while they are in L1. Head dims that are not a multiple of 16 use masked loads. No
// inline library functions here (see ops_avx2.cpp).
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
void chunk_scores(const AttentionTask& t, const uint16_t* k, const float* qh, int64_t c0, int64_t nc,
                  float* scores) {
  const int64_t D = t.head_dim;
  int64_t j = 0;
  for (; j + 4 <= nc; j += 4) {
    const uint16_t* k0 = k + static_cast<size_t>(c0 + j) * t.kv_stride;
    const uint16_t* k1 = k0 + t.kv_stride;
    const uint16_t* k2 = k1 + t.kv_stride;
    const uint16_t* k3 = k2 + t.kv_stride;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
    for (int64_t d = 0; d < D; d += 16) {
      const __mmask16 m = lanes(D - d);
      const __m512 q = _mm512_load_ps(qh + d);
      a0 = _mm512_fmadd_ps(q, load_f16(k0 + d, m), a0);
      a1 = _mm512_fmadd_ps(q, load_f16(k1 + d, m), a1);
      a2 = _mm512_fmadd_ps(q, load_f16(k2 + d, m), a2);
      a3 = _mm512_fmadd_ps(q, load_f16(k3 + d, m), a3);
    }
    scores[j + 0] = hsum_ps(a0) * t.scale;
    scores[j + 1] = hsum_ps(a1) * t.scale;
    scores[j + 2] = hsum_ps(a2) * t.scale;
    scores[j + 3] = hsum_ps(a3) * t.scale;
  }
  for (; j < nc; ++j) {
    const uint16_t* k0 = k + static_cast<size_t>(c0 + j) * t.kv_stride;
    __m512 a0 = _mm512_setzero_ps();
    for (int64_t d = 0; d < D; d += 16) a0 = _mm512_fmadd_ps(_mm512_load_ps(qh + d), load_f16(k0 + d, lanes(D - d)), a0);
    scores[j] = hsum_ps(a0) * t.scale;
  }
}

// acc[d0 .. d0 + 16·NB) += Σ_j p_j · v_{c0+j}[...], the accumulators held in registers.
template <int NB>
void accumulate_v(const AttentionTask& t, const uint16_t* v, const float* p, int64_t c0, int64_t nc, int64_t d0,
                  float* acc) {
  __m512 a[NB];
  __mmask16 m[NB];
  for (int b = 0; b < NB; ++b) {
    a[b] = _mm512_load_ps(acc + d0 + 16 * b);
    m[b] = lanes(t.head_dim - d0 - 16 * b);
  }
  for (int64_t j = 0; j < nc; ++j) {
    const uint16_t* vr = v + static_cast<size_t>(c0 + j) * t.kv_stride + d0;
    const __m512 pj = _mm512_set1_ps(p[j]);
    for (int b = 0; b < NB; ++b) a[b] = _mm512_fmadd_ps(pj, load_f16(vr + 16 * b, m[b]), a[b]);
  }
  for (int b = 0; b < NB; ++b) _mm512_store_ps(acc + d0 + 16 * b, a[b]);
}

void accumulate_v_any(const AttentionTask& t, const uint16_t* v, const float* p, int64_t c0, int64_t nc, float* acc) {
  const int64_t n_vec = (t.head_dim + 15) / 16;
  for (int64_t b0 = 0; b0 < n_vec; b0 += 8) {
    const int64_t d0 = b0 * 16;
    switch (n_vec - b0 >= 8 ? 8 : n_vec - b0) {
      case 1: accumulate_v<1>(t, v, p, c0, nc, d0, acc); break;
      case 2: accumulate_v<2>(t, v, p, c0, nc, d0, acc); break;
      case 3: accumulate_v<3>(t, v, p, c0, nc, d0, acc); break;
      case 4: accumulate_v<4>(t, v, p, c0, nc, d0, acc); break;
      case 5: accumulate_v<5>(t, v, p, c0, nc, d0, acc); break;
      case 6: accumulate_v<6>(t, v, p, c0, nc, d0, acc); break;
      case 7: accumulate_v<7>(t, v, p, c0, nc, d0, acc); break;
      default: accumulate_v<8>(t, v, p, c0, nc, d0, acc); break;
    }
  }
}

}  // namespace

void attend(const AttentionTask& t) {
  const int64_t D = t.head_dim;
  const int64_t n_q = t.h1 - t.h0;
  const size_t dp = static_cast<size_t>((D + 15) / 16 * 16);
  float* qf = t.scratch;                                      // [n_q][dp]
  float* acc = qf + static_cast<size_t>(n_q) * dp;          // [n_q][dp]
  float* scores = acc + static_cast<size_t>(n_q) * dp;     // [n_q][kAttentionChunk]
  float* M = scores + static_cast<size_t>(n_q) * kAttentionChunk;  // [n_q]
  float* S = M + n_q;                                       // [n_q]

  for (int64_t h = 0; h < n_q; ++h) {
    for (int64_t d = 0; d < D; d += 16) {
      const __mmask16 m = lanes(D - d);
      const __m512 q = _mm512_maskz_loadu_ps(m, t.q + (t.h0 + h) * D + d);
      const __m512 q16 = _mm512_cvtph_ps(_mm512_cvtps_ph(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      _mm512_store_ps(qf + h * dp + d, q16);
      _mm512_store_ps(acc + h * dp + d, _mm512_setzero_ps());
    }
    M[h] = -__builtin_inff();
    S[h] = 0.0f;
  }

  for (int64_t c0 = 0; c0 < t.n_kv; c0 += kAttentionChunk) {
    const int64_t nc = t.n_kv - c0 < kAttentionChunk ? t.n_kv - c0 : kAttentionChunk;
    for (int64_t h = 0; h < n_q; ++h) {
      float* sh = scores + h * kAttentionChunk;
      float* ah = acc + h * dp;
      const int64_t kv_offset = (t.h0 + h) / t.group * D;  // this head's KV head
      chunk_scores(t, t.k + kv_offset, qf + h * dp, c0, nc, sh);

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
      accumulate_v_any(t, t.v + kv_offset, sh, c0, nc, ah);
    }
  }

  for (int64_t h = 0; h < n_q; ++h) {
    const __m512 inv = _mm512_set1_ps(1.0f / S[h]);
    for (int64_t d = 0; d < D; d += 16)
      _mm512_mask_storeu_ps(t.out + (t.h0 + h) * D + d, lanes(D - d), _mm512_mul_ps(_mm512_load_ps(acc + h * dp + d), inv));
  }
}

}  // namespace baton::kernels::avx512
