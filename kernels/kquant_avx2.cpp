// AVX2 K-quant kernels: dequantization, the Q8_K activation quantizer and the gemm, all built
// on the unpacked super-block of kquant_unpack.h. The gemm works on tiles of R rows x T tokens
// (R * T = 8 lanes): each super-block of a row is unpacked once per tile, every (row, token)
// integer sum is exact (vpmaddubsw products of at most 2 * 63 * 127, vpmaddwd by the scale),
// and the float steps run lane-wise in the order of the contract in kquant_kernels.h.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/blocks_k.h"
#include "kernels/kquant_kernels.h"
#include "kernels/kquant_unpack.h"

namespace baton::kernels::avx2 {
namespace {

using kq::Kind;
using kq::Unpacked;

// ---- dequantization -------------------------------------------------------------------------

template <class Fmt>
void dequantize(const void* src, float* dst, int64_t n) {
  const uint8_t* x = static_cast<const uint8_t*>(src);
  Unpacked u;
  for (int64_t i = 0; i < n / kQK_K; ++i, x += Fmt::kBytes, dst += kQK_K) {
    Fmt::unpack(x, u);
    // Fully unrolled on purpose: g++ 12's IV optimisation otherwise rewrites the u.q address
    // as a multiple of the u.sc one off a null base, which its pure-const pass then takes for a
    // null dereference and deletes the whole function (seen on Q2_K / Q6_K).
#pragma GCC unroll 16
    for (int s = 0; s < 16; ++s) {
      const __m256 d1 = _mm256_set1_ps(u.d * static_cast<float>(u.sc[s]));
      const __m256 m1 = _mm256_set1_ps(u.dmin * static_cast<float>(u.corr[s]));
      const __m128i q16 = _mm_load_si128(reinterpret_cast<const __m128i*>(u.q + 16 * s));
      for (int h = 0; h < 2; ++h) {
        __m256i q = _mm256_cvtepu8_epi32(h == 0 ? q16 : _mm_unpackhi_epi64(q16, q16));
        if constexpr (Fmt::kKind == Kind::kOffset) q = _mm256_sub_epi32(q, _mm256_set1_epi32(Fmt::kOffset));
        __m256 y = _mm256_mul_ps(d1, _mm256_cvtepi32_ps(q));
        if constexpr (Fmt::kKind == Kind::kMins) y = _mm256_sub_ps(y, m1);
        _mm256_storeu_ps(dst + 16 * s + 8 * h, y);
      }
    }
  }
}

// ---- gemm -----------------------------------------------------------------------------------

// Lane i of the result = sum of the 8 lanes of v[i], for 8 vectors.
__m256i reduce8(const __m256i v[8]) {
  const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]), h23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]), h67 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i a = _mm256_hadd_epi32(h01, h23), b = _mm256_hadd_epi32(h45, h67);
  // a = [v0..v3 low-half sums | v0..v3 high-half sums], b likewise for v4..v7.
  return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
}

// The int16 scale of each vpmaddubsw pair of 32-element chunk c: sc[2c] for the low 16 bytes,
// sc[2c + 1] for the high 16.
inline __m256i chunk_scales(const Unpacked& u, int c) {
  int32_t pair;
  std::memcpy(&pair, u.sc + 2 * c, 4);
  const __m256i spread = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,  //
                                          2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
  return _mm256_shuffle_epi8(_mm256_set1_epi32(pair), spread);
}

inline __m256i load_bsums(const uint8_t* a_block) { return kq::load32(a_block + offsetof(BlockQ8K, bsums)); }
inline __m256i load_corr(const Unpacked& u) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(u.corr)); }

inline float a_scale(const uint8_t* a_block) {
  float d;
  std::memcpy(&d, a_block + offsetof(BlockQ8K, d), 4);
  return d;
}

// One tile: rows w[0..R), tokens a[0..T) (pointers may repeat to pad a partial tile);
// result lane r * T + t goes to res[r * T + t].
template <class Fmt, int R, int T>
void gemm_tile(int64_t nb, const uint8_t* const* w, const uint8_t* const* a, float* res) {
  static_assert(R * T == 8);
  Unpacked u[R];
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    for (int r = 0; r < R; ++r) Fmt::unpack(w[r] + b * static_cast<int64_t>(Fmt::kBytes), u[r]);
    const uint8_t* ab[T];
    for (int t = 0; t < T; ++t) ab[t] = a[t] + b * static_cast<int64_t>(sizeof(BlockQ8K));
    __m256i sum[R * T];
    for (auto& s : sum) s = _mm256_setzero_si256();
    for (int c = 0; c < 8; ++c) {
      for (int r = 0; r < R; ++r) {
        const __m256i wq = _mm256_load_si256(reinterpret_cast<const __m256i*>(u[r].q + 32 * c));
        const __m256i sc = chunk_scales(u[r], c);
        for (int t = 0; t < T; ++t) {
          const __m256i aq = kq::load32(ab[t] + offsetof(BlockQ8K, qs) + 32 * c);
          sum[r * T + t] = _mm256_add_epi32(sum[r * T + t], _mm256_madd_epi16(_mm256_maddubs_epi16(wq, aq), sc));
        }
      }
    }
    __m256i corr[R * T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) corr[r * T + t] = _mm256_madd_epi16(load_corr(u[r]), load_bsums(ab[t]));
    if constexpr (Fmt::kKind == Kind::kOffset)
      for (int i = 0; i < R * T; ++i) sum[i] = _mm256_add_epi32(sum[i], corr[i]);

    alignas(32) float dw[8], da[8], dm[8];
    for (int r = 0; r < R; ++r) {
      for (int t = 0; t < T; ++t) {
        dw[r * T + t] = u[r].d;
        dm[r * T + t] = u[r].dmin;
        da[r * T + t] = a_scale(ab[t]);
      }
    }
    const __m256 vda = _mm256_load_ps(da);
    acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_load_ps(dw), vda), _mm256_cvtepi32_ps(reduce8(sum)), acc);
    if constexpr (Fmt::kKind == Kind::kMins)
      acc = _mm256_fnmadd_ps(_mm256_mul_ps(_mm256_load_ps(dm), vda), _mm256_cvtepi32_ps(reduce8(corr)), acc);
  }
  _mm256_storeu_ps(res, acc);
}

template <class Fmt, int R, int T>
void gemm_tiles(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                int64_t n_tok, float* out, size_t out_stride) {
  const int64_t nb = k / kQK_K;
  const uint8_t* w8 = static_cast<const uint8_t*>(w);
  const uint8_t* a8 = static_cast<const uint8_t*>(a);
  for (int64_t r0 = 0; r0 < n_rows; r0 += R) {
    const int64_t nr = std::min<int64_t>(R, n_rows - r0);
    const uint8_t* wr[R];
    for (int r = 0; r < R; ++r) wr[r] = w8 + static_cast<size_t>(r0 + std::min<int64_t>(r, nr - 1)) * w_stride;
    for (int64_t t0 = 0; t0 < n_tok; t0 += T) {
      const int64_t nt = std::min<int64_t>(T, n_tok - t0);
      const uint8_t* at[T];
      for (int t = 0; t < T; ++t) at[t] = a8 + static_cast<size_t>(t0 + std::min<int64_t>(t, nt - 1)) * a_stride;
      float res[8];
      gemm_tile<Fmt, R, T>(nb, wr, at, res);
      for (int64_t t = 0; t < nt; ++t)
        for (int64_t r = 0; r < nr; ++r) out[static_cast<size_t>(t0 + t) * out_stride + static_cast<size_t>(r0 + r)] = res[r * T + t];
    }
  }
}

template <class Fmt>
void gemm(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
          float* out, size_t out_stride) {
  if (n_tok == 1)
    gemm_tiles<Fmt, 8, 1>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
  else if (n_tok == 2 || n_rows >= 4 * n_tok)
    gemm_tiles<Fmt, 4, 2>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
  else
    gemm_tiles<Fmt, 2, 4>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

}  // namespace

// ---- Q8_K -------------------------------------------------------------------------------------

void quantize_q8_k(const float* src, void* dst, int64_t n) {
  uint8_t* y = static_cast<uint8_t*>(dst);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int64_t i = 0; i < n / kQK_K; ++i, src += kQK_K, y += sizeof(BlockQ8K)) {
    __m256 vmax = _mm256_setzero_ps();
    for (int j = 0; j < kQK_K; j += 8) vmax = _mm256_max_ps(vmax, _mm256_and_ps(_mm256_loadu_ps(src + j), abs_mask));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    BlockQ8K block{};
    if (amax != 0.0f) {
      // The first element of largest magnitude, with its sign.
      const __m256 target = _mm256_set1_ps(amax);
      int first = 0;
      for (int j = 0; j < kQK_K; j += 8) {
        const int hits = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(src + j), abs_mask), target, _CMP_EQ_OQ));
        if (hits) {
          first = j + __builtin_ctz(static_cast<unsigned>(hits));
          break;
        }
      }
      const float iscale = -127.0f / src[first];
      const __m256 vs = _mm256_set1_ps(iscale);
      const __m256i hi = _mm256_set1_epi32(127);
      for (int s = 0; s < 16; ++s) {
        const __m256i q0 = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(vs, _mm256_loadu_ps(src + 16 * s))), hi);
        const __m256i q1 = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(vs, _mm256_loadu_ps(src + 16 * s + 8))), hi);
        const __m256i sum = _mm256_add_epi32(q0, q1);
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
        s4 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 1));
        block.bsums[s] = static_cast<int16_t>(_mm_cvtsi128_si32(s4));
        // int32 -> int16 -> int8 with in-lane packs, then undo the lane interleave.
        const __m256i p16 = _mm256_packs_epi32(q0, q1);  // 0-3 8-11 | 4-7 12-15
        const __m128i p8 = _mm_packs_epi16(_mm256_castsi256_si128(p16), _mm256_extracti128_si256(p16, 1));
        const __m128i order = _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(block.qs + 16 * s), _mm_shuffle_epi8(p8, order));
      }
      block.d = 1.0f / iscale;
    }
    std::memcpy(y, &block, sizeof block);
  }
}

// ---- entry points ---------------------------------------------------------------------------

void dequantize_q2_k(const void* src, float* dst, int64_t n) { dequantize<kq::FmtQ2K>(src, dst, n); }
void dequantize_q3_k(const void* src, float* dst, int64_t n) { dequantize<kq::FmtQ3K>(src, dst, n); }
void dequantize_q4_k(const void* src, float* dst, int64_t n) { dequantize<kq::FmtQ4K>(src, dst, n); }
void dequantize_q5_k(const void* src, float* dst, int64_t n) { dequantize<kq::FmtQ5K>(src, dst, n); }
void dequantize_q6_k(const void* src, float* dst, int64_t n) { dequantize<kq::FmtQ6K>(src, dst, n); }

void gemm_q2_k(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, float* out, size_t os) {
  gemm<kq::FmtQ2K>(k, w, ws, nr, a, as, nt, out, os);
}
void gemm_q3_k(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, float* out, size_t os) {
  gemm<kq::FmtQ3K>(k, w, ws, nr, a, as, nt, out, os);
}
void gemm_q4_k(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, float* out, size_t os) {
  gemm<kq::FmtQ4K>(k, w, ws, nr, a, as, nt, out, os);
}
void gemm_q5_k(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, float* out, size_t os) {
  gemm<kq::FmtQ5K>(k, w, ws, nr, a, as, nt, out, os);
}
void gemm_q6_k(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, float* out, size_t os) {
  gemm<kq::FmtQ6K>(k, w, ws, nr, a, as, nt, out, os);
}

}  // namespace baton::kernels::avx2
