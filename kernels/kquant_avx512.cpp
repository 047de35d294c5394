// AVX-512 (F/BW/VL/DQ) K-quant kernels: dequantization, the Q8_K activation quantizer and the
// row-parallel gemm used for decode and small batches. Tiles of R rows x T tokens (R * T <= 16
// lanes) unpack each super-block of a row once (kquant_unpack.h) and reuse it for T tokens;
// each (row, token) integer sum is exact and is reduced to one lane per super-block, so the
// float steps run lane-wise in the order of the contract in kquant_kernels.h.
// The VNNI token-parallel kernel for larger batches is in kquant_vnni_avx512.cpp.
#include "kernels/kquant_avx512.h"

#include <algorithm>
#include <cstring>

#include "kernels/kquant_kernels.h"

namespace baton::kernels::avx512 {
namespace {

using kq::Kind;
using kq::Unpacked;

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
      const __m512 d1 = _mm512_set1_ps(u.d * static_cast<float>(u.sc[s]));
      __m512i q = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(u.q + 16 * s)));
      if constexpr (Fmt::kKind == Kind::kOffset) q = _mm512_sub_epi32(q, _mm512_set1_epi32(Fmt::kOffset));
      __m512 y = _mm512_mul_ps(d1, _mm512_cvtepi32_ps(q));
      if constexpr (Fmt::kKind == Kind::kMins)
        y = _mm512_sub_ps(y, _mm512_set1_ps(u.dmin * static_cast<float>(u.corr[s])));
      _mm512_storeu_ps(dst + 16 * s, y);
    }
  }
}

// One tile: rows w[0..R), tokens a[0..T) (pointers may repeat to pad a partial tile); the
// result of (row r, token t) goes to res[r * T + t].
template <class Fmt, int R, int T>
void gemm_tile(int64_t nb, const uint8_t* const* w, const uint8_t* const* a, float* res) {
  static_assert(R * T <= 16);
  Unpacked u[R];
  __m512 acc = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    for (int r = 0; r < R; ++r) Fmt::unpack(w[r] + b * static_cast<int64_t>(Fmt::kBytes), u[r]);
    const uint8_t* ab[T];
    for (int t = 0; t < T; ++t) ab[t] = a[t] + b * static_cast<int64_t>(sizeof(BlockQ8K));

    __m512i sum[16];
    for (auto& s : sum) s = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
      for (int r = 0; r < R; ++r) {
        const __m512i wq = _mm512_load_si512(u[r].q + 64 * c);
        const __m512i sc = chunk_scales(u[r], c);
        for (int t = 0; t < T; ++t) {
          const __m512i aq = _mm512_loadu_si512(ab[t] + offsetof(BlockQ8K, qs) + 64 * c);
          sum[r * T + t] = _mm512_add_epi32(sum[r * T + t], _mm512_madd_epi16(_mm512_maddubs_epi16(wq, aq), sc));
        }
      }
    }
    __m256i corr[16];
    for (auto& s : corr) s = _mm256_setzero_si256();
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) corr[r * T + t] = _mm256_madd_epi16(load_corr(u[r]), load_bsums(ab[t]));
    if constexpr (Fmt::kKind == Kind::kOffset)
      for (int i = 0; i < R * T; ++i) sum[i] = _mm512_add_epi32(sum[i], _mm512_zextsi256_si512(corr[i]));

    alignas(64) float dw[16] = {}, da[16] = {}, dm[16] = {};
    for (int r = 0; r < R; ++r) {
      for (int t = 0; t < T; ++t) {
        dw[r * T + t] = u[r].d;
        dm[r * T + t] = u[r].dmin;
        da[r * T + t] = a_scale(ab[t]);
      }
    }
    const __m512 vda = _mm512_load_ps(da);
    acc = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_load_ps(dw), vda), _mm512_cvtepi32_ps(reduce16(sum)), acc);
    if constexpr (Fmt::kKind == Kind::kMins)
      acc = _mm512_fnmadd_ps(_mm512_mul_ps(_mm512_load_ps(dm), vda), _mm512_cvtepi32_ps(reduce16(corr)), acc);
  }
  _mm512_storeu_ps(res, acc);
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
      alignas(64) float res[16];
      if (nr == R) {
        gemm_tile<Fmt, R, T>(nb, wr, at, res);
      } else {
        // A partial row tile: run it row by row, so a lone row costs one row.
        for (int64_t r = 0; r < nr; ++r) {
          alignas(64) float one[16];
          gemm_tile<Fmt, 1, T>(nb, wr + r, at, one);
          for (int t = 0; t < T; ++t) res[r * T + t] = one[t];
        }
      }
      for (int64_t t = 0; t < nt; ++t)
        for (int64_t r = 0; r < nr; ++r)
          out[static_cast<size_t>(t0 + t) * out_stride + static_cast<size_t>(r0 + r)] = res[r * T + t];
    }
  }
}

template <class Fmt>
void gemm_rows(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
               int64_t n_tok, float* out, size_t out_stride) {
  if (n_tok == 1)
    gemm_tiles<Fmt, 8, 1>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
  else if (n_tok == 2)
    gemm_tiles<Fmt, 8, 2>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
  else if (n_tok == 3)
    gemm_tiles<Fmt, 5, 3>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
  else
    gemm_tiles<Fmt, 4, 4>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

}  // namespace


void quantize_q8_k(const float* src, void* dst, int64_t n) {
  uint8_t* y = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, src += kQK_K, y += sizeof(BlockQ8K)) {
    __m512 vmax = _mm512_setzero_ps();
    for (int j = 0; j < kQK_K; j += 16) vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_loadu_ps(src + j)));
    const float amax = _mm512_reduce_max_ps(vmax);
    BlockQ8K block{};
    if (amax != 0.0f) {
      // The first element of largest magnitude, with its sign.
      const __m512 target = _mm512_set1_ps(amax);
      int first = 0;
      for (int j = 0; j < kQK_K; j += 16) {
        const __mmask16 hits = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(src + j)), target, _CMP_EQ_OQ);
        if (hits) {
          first = j + __builtin_ctz(static_cast<unsigned>(hits));
          break;
        }
      }
      const float iscale = -127.0f / src[first];
      const __m512 vs = _mm512_set1_ps(iscale);
      for (int s = 0; s < 16; ++s) {
        const __m512i q =
            _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(vs, _mm512_loadu_ps(src + 16 * s))), _mm512_set1_epi32(127));
        block.bsums[s] = static_cast<int16_t>(_mm512_reduce_add_epi32(q));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(block.qs + 16 * s), _mm512_cvtepi32_epi8(q));
      }
      block.d = 1.0f / iscale;
    }
    std::memcpy(y, &block, sizeof block);
  }
}

void dequantize_q2_k(const void* src, float* dst, int64_t n) { dequantize<kq::FmtQ2K>(src, dst, n); }
void dequantize_q3_k(const void* src, float* dst, int64_t n) { dequantize<kq::FmtQ3K>(src, dst, n); }
void dequantize_q4_k(const void* src, float* dst, int64_t n) { dequantize<kq::FmtQ4K>(src, dst, n); }
void dequantize_q5_k(const void* src, float* dst, int64_t n) { dequantize<kq::FmtQ5K>(src, dst, n); }
void dequantize_q6_k(const void* src, float* dst, int64_t n) { dequantize<kq::FmtQ6K>(src, dst, n); }

void gemm_q2_k(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, float* out, size_t os) {
  gemm_rows<kq::FmtQ2K>(k, w, ws, nr, a, as, nt, out, os);
}
void gemm_q3_k(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, float* out, size_t os) {
  gemm_rows<kq::FmtQ3K>(k, w, ws, nr, a, as, nt, out, os);
}
void gemm_q4_k(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, float* out, size_t os) {
  gemm_rows<kq::FmtQ4K>(k, w, ws, nr, a, as, nt, out, os);
}
void gemm_q5_k(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, float* out, size_t os) {
  gemm_rows<kq::FmtQ5K>(k, w, ws, nr, a, as, nt, out, os);
}
void gemm_q6_k(int64_t k, const void* w, size_t ws, int64_t nr, const void* a, size_t as, int64_t nt, float* out, size_t os) {
  gemm_rows<kq::FmtQ6K>(k, w, ws, nr, a, as, nt, out, os);
}

}  // namespace baton::kernels::avx512
