// AVX-512 + VNNI gemms of the legacy formats: block32/block32_gemm_llama.h with dpbusd for the int32
// lanes (the same exact sums as maddubs/madd, so bitwise the same results).
#pragma GCC target("avx512vnni")

#include "kernels/block32/block32_gemm_llama.h"
#include "kernels/block32/kernels.h"
#include "kernels/block32/q4_0_gemm_x16.h"

namespace baton::kernels::avx512 {

BATON_LEGACY_LLAMA_GEMMS(_vnni, true)
BATON_LEGACY_Q4_0_X16_GEMM(_vnni, true)

}  // namespace baton::kernels::avx512
