#include "kernels/kernel_scratch.h"

#include "engine/base/aligned_buffer.h"

namespace baton::kernels::detail {
namespace {
thread_local uint64_t tl_matmul = 0;
}  // namespace

uint64_t current_matmul() { return tl_matmul; }

MatmulScope::MatmulScope(uint64_t id) : saved_(tl_matmul) { tl_matmul = id; }
MatmulScope::~MatmulScope() { tl_matmul = saved_; }

void* thread_scratch(size_t bytes) {
  thread_local AlignedBuffer buffer;
  buffer.resize(bytes);
  return buffer.data();
}

}  // namespace baton::kernels::detail
