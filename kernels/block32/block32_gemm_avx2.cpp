// AVX2 gemms of the legacy formats in llama.cpp's x86 order (block32/block32_gemm_llama.h): 8 int32
// lanes per block from maddubs/madd, one fma per block, llama.cpp's 8-lane horizontal sum.
// Bitwise equal to the scalar reference; batch invariant (every (row, token) pair runs the same
// sequence whatever tile it is in). Tiles: 2 rows x 4 tokens for prefill, 1 row for decode;
// Q4_0 8 rows x 2 tokens (lane r of one vector = row r). Built twice (simd256_tier.h): avx2::, and
// avxvnni:: with the dot products by vpdpbusd (kVnni).
#include "kernels/block32/block32_gemm_llama.h"
#include "kernels/block32/kernels.h"
#include "kernels/block32/q4_0_gemm_x16.h"
#include "kernels/core/simd256_tier.h"

namespace baton::kernels::BATON_SIMD256_NS {

BATON_LEGACY_LLAMA_GEMMS(, dot256::kVnni)
BATON_LEGACY_Q4_0_X16_GEMM(, dot256::kVnni)

}  // namespace baton::kernels::BATON_SIMD256_NS
