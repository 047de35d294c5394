// AVX-512 + VNNI gemms of the legacy formats: legacy_gemm_llama.h with dpbusd for the int32
// lanes (the same exact sums as maddubs/madd, so bitwise the same results).
#pragma GCC target("avx512vnni")

#include "kernels/legacy_gemm_llama.h"
#include "kernels/legacy_kernels.h"
#include "kernels/legacy_q4_0_x16.h"

namespace baton::kernels::avx512 {

BATON_LEGACY_LLAMA_GEMMS(_vnni, true)
BATON_LEGACY_Q4_0_X16_GEMM(_vnni, true)

}  // namespace baton::kernels::avx512
