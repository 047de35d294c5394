// AVX2+FMA+F16C attention for a range of query heads of one query (built with -march=x86-64-v3):
// the algorithm of attention_scalar.cpp with 8-lane f32 dot products and avx2::exp_ps. Each
// chunk of positions is visited once for all heads; the query heads of one KV head share its
// K/V rows while they are in L1. Head dims that are not a multiple of 8 go through a
// zero-padded copy. No inline library functions here.
#include <immintrin.h>

#include <cstring>

#include "kernels/attention_internal.h"
#include "kernels/ops_math_avx2.h"

namespace baton::kernels::avx2 {
namespace {

// 8 halves from p converted to f32; only the first rem (< 8) are read when rem < 8.
__m256 load_f16(const uint16_t* p, int64_t rem) {
  if (rem >= 8) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  uint16_t buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::memcpy(buf, p, static_cast<size_t>(rem) * sizeof(uint16_t));
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(buf)));
}

__m256 load_f32(const float* p, int64_t rem) {
  if (rem >= 8) return _mm256_loadu_ps(p);
  float buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::memcpy(buf, p, static_cast<size_t>(rem) * sizeof(float));
  return _mm256_loadu_ps(buf);
}

float exp1(float x) { return _mm256_cvtss_f32(exp_ps(_mm256_set1_ps(x))); }

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
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    for (int64_t d = 0; d < D; d += 8) {
      const __m256 q = _mm256_load_ps(qh + d);
      a0 = _mm256_fmadd_ps(q, load_f16(k0 + d, D - d), a0);
      a1 = _mm256_fmadd_ps(q, load_f16(k1 + d, D - d), a1);
      a2 = _mm256_fmadd_ps(q, load_f16(k2 + d, D - d), a2);
      a3 = _mm256_fmadd_ps(q, load_f16(k3 + d, D - d), a3);
    }
    scores[j + 0] = hsum_ps(a0) * t.scale;
    scores[j + 1] = hsum_ps(a1) * t.scale;
    scores[j + 2] = hsum_ps(a2) * t.scale;
    scores[j + 3] = hsum_ps(a3) * t.scale;
  }
  for (; j < nc; ++j) {
    const uint16_t* k0 = k + static_cast<size_t>(c0 + j) * t.kv_stride;
    __m256 a0 = _mm256_setzero_ps();
    for (int64_t d = 0; d < D; d += 8) a0 = _mm256_fmadd_ps(_mm256_load_ps(qh + d), load_f16(k0 + d, D - d), a0);
    scores[j] = hsum_ps(a0) * t.scale;
  }
}

// acc[d0 .. d0 + 8·NB) += Σ_j p_j · v_{c0+j}[...], the accumulators held in registers.
template <int NB>
void accumulate_v(const AttentionTask& t, const uint16_t* v, const float* p, int64_t c0, int64_t nc, int64_t d0,
                  float* acc) {
  __m256 a[NB];
  for (int b = 0; b < NB; ++b) a[b] = _mm256_load_ps(acc + d0 + 8 * b);
  for (int64_t j = 0; j < nc; ++j) {
    const uint16_t* vr = v + static_cast<size_t>(c0 + j) * t.kv_stride + d0;
    const __m256 pj = _mm256_set1_ps(p[j]);
    for (int b = 0; b < NB; ++b) a[b] = _mm256_fmadd_ps(pj, load_f16(vr + 8 * b, t.head_dim - d0 - 8 * b), a[b]);
  }
  for (int b = 0; b < NB; ++b) _mm256_store_ps(acc + d0 + 8 * b, a[b]);
}

void accumulate_v_any(const AttentionTask& t, const uint16_t* v, const float* p, int64_t c0, int64_t nc, float* acc) {
  const int64_t n_vec = (t.head_dim + 7) / 8;
  for (int64_t b0 = 0; b0 < n_vec; b0 += 8) {
    const int64_t d0 = b0 * 8;
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
    for (size_t d = 0; d < dp; d += 8) {
      const int64_t rem = D - static_cast<int64_t>(d);
      const __m256 q = rem > 0 ? load_f32(t.q + (t.h0 + h) * D + static_cast<int64_t>(d), rem) : _mm256_setzero_ps();
      const __m256 q16 = _mm256_cvtph_ps(_mm256_cvtps_ph(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      _mm256_store_ps(qf + h * dp + d, q16);
      _mm256_store_ps(acc + h * dp + d, _mm256_setzero_ps());
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
      for (int64_t j = nc; j < (nc + 7) / 8 * 8; ++j) sh[j] = -__builtin_inff();  // pad the last vector

      __m256 vmax = _mm256_set1_ps(-__builtin_inff());
      for (int64_t j = 0; j < nc; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(sh + j));
      const float m = hmax_ps(vmax);
      if (m > M[h]) {
        const float alpha = exp1(M[h] - m);
        S[h] *= alpha;
        const __m256 va = _mm256_set1_ps(alpha);
        for (size_t d = 0; d < dp; d += 8) _mm256_store_ps(ah + d, _mm256_mul_ps(_mm256_load_ps(ah + d), va));
        M[h] = m;
      }
      const __m256 vm = _mm256_set1_ps(M[h]);
      __m256 psum = _mm256_setzero_ps();
      for (int64_t j = 0; j < nc; j += 8) {
        const __m256 p = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(sh + j), vm));  // padding: exp(-inf) = 0
        _mm256_storeu_ps(sh + j, p);
        psum = _mm256_add_ps(psum, p);
      }
      S[h] += hsum_ps(psum);
      accumulate_v_any(t, t.v + kv_offset, sh, c0, nc, ah);
    }
  }

  for (int64_t h = 0; h < n_q; ++h) {
    const __m256 inv = _mm256_set1_ps(1.0f / S[h]);
    int64_t d = 0;
    for (; d + 8 <= D; d += 8)
      _mm256_storeu_ps(t.out + (t.h0 + h) * D + d, _mm256_mul_ps(_mm256_load_ps(acc + h * dp + d), inv));
    for (; d < D; ++d) t.out[(t.h0 + h) * D + d] = acc[h * dp + d] * _mm256_cvtss_f32(inv);
  }
}

}  // namespace baton::kernels::avx2
