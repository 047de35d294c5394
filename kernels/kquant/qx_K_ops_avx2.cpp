// AVX2 K-quant kernels: dequantization, the Q8_K activation quantizer and the gemm: the
// register-direct row kernels of kquant/q45_K_gemm_rowdot.h for decode (n_tok = 1; Q4_K and Q5_K: the
// row-pair kernels gemm_rowdot_pairs), the tiled kernel of
// kquant/qx_K_gemm_rows256.h (on the unpacked super-block of kquant/qx_K_unpack.h) for batches.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/kquant/blocks.h"
#include "kernels/kquant/kernels.h"
#include "kernels/kquant/q4_K_gemm_tok8.h"
#include "kernels/kquant/q45_K_gemm_rowdot.h"
#include "kernels/kquant/qx_K_gemm_rows256.h"
#include "kernels/kquant/qx_K_unpack.h"

namespace baton::kernels::BATON_SIMD256_NS {
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

}  // namespace

// ---- Q8_K -------------------------------------------------------------------------------------

void quantize_q8_k(const float* src, void* dst, int64_t n) {
  uint8_t* y = static_cast<uint8_t*>(dst);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int64_t i = 0; i < n / kQK_K; ++i, src += kQK_K, y += sizeof(BlockQ8K)) {
    __m256 vmax = _mm256_setzero_ps();
    // vmaxps returns its second operand when either is NaN: with the running maximum second, NaN
    // inputs are skipped, as the scalar reference's `|x| > amax` skips them.
    for (int j = 0; j < kQK_K; j += 8) vmax = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(src + j), abs_mask), vmax);
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
      block.d = 1.0f / iscale;
      // A block of magnitudes below 127 / FLT_MAX: ggml's nearest_int turns the infinite
      // products into 0, so the block is all zero (with d = -0 or +0).
      if (!std::isfinite(iscale)) {
        std::memcpy(y, &block, sizeof block);
        continue;
      }
      const __m256 vs = _mm256_set1_ps(iscale);
      const __m256i hi = _mm256_set1_epi32(127);
      // Products are within +-127 except NaN (a NaN input, or an infinite one times iscale = 0
      // when the block's maximum is infinite): ggml's nearest_int maps the default NaN to 0.
      auto quantize8 = [&](const float* x) {
        const __m256 p = _mm256_mul_ps(vs, _mm256_loadu_ps(x));
        return _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_and_ps(p, _mm256_cmp_ps(p, p, _CMP_ORD_Q))), hi);
      };
      for (int s = 0; s < 16; ++s) {
        const __m256i q0 = quantize8(src + 16 * s);
        const __m256i q1 = quantize8(src + 16 * s + 8);
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
    }
    std::memcpy(y, &block, sizeof block);
  }
}

// ---- entry points ---------------------------------------------------------------------------

#include "kernels/kquant/qx_K_ops_simd.inc"
#include "kernels/core/simd256_tier.h"

}  // namespace baton::kernels::BATON_SIMD256_NS
