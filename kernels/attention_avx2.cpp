// avx2 attention for a range of query heads of one query (built with -march=x86-64-v3):
// attention_onechunk.inc's 256-bit F16C/FMA version of the reference algorithm of
// attention_scalar.cpp, bitwise equal to it.
#include <immintrin.h>

#include <cmath>

#include "engine/base/fp16.h"
#include "kernels/attention.h"
#include "kernels/attention_internal.h"

namespace baton::kernels::avx2 {
namespace {

#include "kernels/attention_onechunk.inc"

}  // namespace

void attend(const AttentionTask& t) { attend_reference(t); }

}  // namespace baton::kernels::avx2
