// AVX-512 builds of the legacy gemms: the llama.cpp-order kernels of block32/block32_gemm_llama.h
// (256-bit ymm, using the 32 registers for 4x4 tiles; Q4_0 16 rows x 4 tokens in zmm), compiled for
// x86-64-v4. Used on AVX-512 CPUs without VNNI.
#include "kernels/block32/block32_gemm_llama.h"
#include "kernels/block32/kernels.h"
#include "kernels/block32/q4_0_gemm_x16.h"

namespace baton::kernels::avx512 {

BATON_LEGACY_LLAMA_GEMMS(, false)
BATON_LEGACY_Q4_0_X16_GEMM(, false)

}  // namespace baton::kernels::avx512
