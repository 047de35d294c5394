// Per-thread scratch memory for kernels that repack their inputs (e.g. the quantized gemms
// pack activation blocks). Lives in a baseline-ISA file so that the *_avx2/_avx512 files need
// no shared inline code (an AVX-512 copy of an inline function could win at link time).
#pragma once

#include <cstddef>
#include <cstdint>

namespace baton::kernels::detail {

// 64-byte aligned, at least `bytes` long, owned by the calling thread; valid until the next
// call on the same thread. Grows as needed, never shrinks: no allocation in steady state.
void* thread_scratch(size_t bytes);

// The matmul (MatmulDriver call) whose chunks this thread is running, 0 outside one. A gemm that
// prepares its activations per call (the repacked Q4_K passes) may reuse what it prepared
// earlier on this thread for the same id, activation pointer and shape: within one matmul the
// converted activations do not change. Outside a matmul (tests, benchmarks calling a gemm
// directly) the id is 0 and a kernel must prepare every time.
uint64_t current_matmul();

// Marks this thread as running chunks of matmul `id` (non-zero, unique per matmul) for its
// lifetime.
class MatmulScope {
 public:
  explicit MatmulScope(uint64_t id);
  ~MatmulScope();
  MatmulScope(const MatmulScope&) = delete;
  MatmulScope& operator=(const MatmulScope&) = delete;

 private:
  uint64_t saved_;
};

// What a gemm prepared from its activations last: within one matmul (current_matmul) the driver
// calls it once per row chunk with the same activations, and the prepared form can be reused.
class PreparedActivations {
 public:
  // True if (a, a_stride, n_tok, nb) are the activations of the last call in the same matmul
  // (reuse what was prepared); otherwise records them as the ones about to be prepared.
  bool same_as_last(const void* a, size_t a_stride, int64_t n_tok, int64_t nb);

 private:
  uint64_t matmul_ = 0;  // 0: nothing to reuse
  const void* a_ = nullptr;
  size_t a_stride_ = 0;
  int64_t n_tok_ = 0, nb_ = 0;
};

}  // namespace baton::kernels::detail
