// avx2 attention for a range of query heads of one query (built with -march=x86-64-v3):
// attention/attention_onechunk_simd.inc's and attention/attention_tiled_simd.inc's 256-bit F16C/FMA versions of the
// reference algorithms of attention_scalar.cpp, bitwise equal to them.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/base/fp16.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_internal.h"
#include "kernels/core/prefetch_l2.h"

namespace baton::kernels::avx2 {
// ggml's AVX2 ggml_v_expf, lane for lane (ops_avx2.cpp).
__m256 ggml_v_expf(__m256 x);
}  // namespace baton::kernels::avx2

namespace baton::kernels::avx2 {
namespace {

#include "kernels/attention/expf_glibc_simd.inc"
#include "kernels/attention/attention_onechunk_simd.inc"
#include "kernels/attention/attention_tiled_simd.inc"

}  // namespace

void expf_glibc(const float* x, float* y, int64_t n) { expf_glibc_n(x, y, n); }

void attend(const AttentionTask& t) {
  if (t.tiled) return attend_tiled_simd(t);
  if (t.head_dim == 64) return attend_reference<64>(t);
  if (t.head_dim == 128) return attend_reference<128>(t);
  attend_reference(t);
}

}  // namespace baton::kernels::avx2
