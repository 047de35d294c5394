#include "kernels/core/scratch.h"

#include "engine/base/aligned_buffer.h"

namespace baton::kernels::detail {
namespace {
thread_local uint64_t tl_matmul = 0;
}  // namespace

uint64_t current_matmul() { return tl_matmul; }

MatmulScope::MatmulScope(uint64_t id) : saved_(tl_matmul) { tl_matmul = id; }
MatmulScope::~MatmulScope() { tl_matmul = saved_; }

bool PreparedActivations::same_as_last(const void* a, size_t a_stride, int64_t n_tok, int64_t nb) {
  const uint64_t matmul = current_matmul();
  if (matmul != 0 && matmul == matmul_ && a == a_ && a_stride == a_stride_ && n_tok == n_tok_ && nb == nb_) return true;
  matmul_ = matmul, a_ = a, a_stride_ = a_stride, n_tok_ = n_tok, nb_ = nb;
  return false;
}

void* thread_scratch(size_t bytes) {
  thread_local AlignedBuffer buffer;
  buffer.resize(bytes);
  return buffer.data();
}

}  // namespace baton::kernels::detail
