// AVX-512 (F/BW/VL/DQ) K-quant kernels: 512-bit dequantization and Q8_K activation quantizer.
// The gemm is 256-bit, built for x86-64-v4: the register-direct row kernel of kquant/q45_K_gemm_rowdot.h
// for decode (n_tok = 1), the tiled kernel of kquant/qx_K_gemm_rows256.h for batches (on Zen 4, whose
// 512-bit integer ops run at half rate, a zmm version of it measured 1.7x slower for decode).
// With VNNI (kquant/q45_K_gemm_tokens_avx512vnni.cpp) decode uses vpdpbusd and batches a token-parallel kernel.
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

}  // namespace

void quantize_q8_k(const float* src, void* dst, int64_t n) {
  uint8_t* y = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, src += kQK_K, y += sizeof(BlockQ8K)) {
    // vmaxps returns its second operand when either is NaN: with the running maximum second, NaN
    // inputs are skipped, as the scalar reference's `|x| > amax` skips them.
    __m512 vmax = _mm512_setzero_ps();
    for (int j = 0; j < kQK_K; j += 16) vmax = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(src + j)), vmax);
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
      block.d = 1.0f / iscale;
      // A block of magnitudes below 127 / FLT_MAX: ggml's nearest_int turns the infinite
      // products into 0, so the block is all zero (with d = -0 or +0).
      if (!std::isfinite(iscale)) {
        std::memcpy(y, &block, sizeof block);
        continue;
      }
      const __m512 vs = _mm512_set1_ps(iscale);
      for (int s = 0; s < 16; ++s) {
        // Products are within +-127 except NaN (a NaN input, or an infinite one times iscale = 0
        // when the block's maximum is infinite). vcvtps2dq would turn NaN into INT_MIN, and a
        // sum of those overflows; ggml's nearest_int maps the default NaN to 0, so do that.
        const __m512 p = _mm512_mul_ps(vs, _mm512_loadu_ps(src + 16 * s));
        const __m512 p_num = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(p, p, _CMP_ORD_Q), p);
        const __m512i q = _mm512_min_epi32(_mm512_cvtps_epi32(p_num), _mm512_set1_epi32(127));
        block.bsums[s] = static_cast<int16_t>(_mm512_reduce_add_epi32(q));  // |sum| <= 16 * 127
        _mm_storeu_si128(reinterpret_cast<__m128i*>(block.qs + 16 * s), _mm512_cvtepi32_epi8(q));
      }
    }
    std::memcpy(y, &block, sizeof block);
  }
}

#include "kernels/kquant/qx_K_ops_simd.inc"

}  // namespace baton::kernels::avx512
