// Per-thread scratch memory for kernels that repack their inputs (e.g. the quantized gemms
// pack activation blocks). Lives in a baseline-ISA file so that the *_avx2/_avx512 files need
// no shared inline code (an AVX-512 copy of an inline function could win at link time).
#pragma once

#include <cstddef>

namespace baton::kernels::detail {

// 64-byte aligned, at least `bytes` long, owned by the calling thread; valid until the next
// call on the same thread. Grows as needed, never shrinks: no allocation in steady state.
void* thread_scratch(size_t bytes);

}  // namespace baton::kernels::detail
