#include "kernels/kernel_scratch.h"

#include "engine/base/aligned_buffer.h"

namespace baton::kernels::detail {

void* thread_scratch(size_t bytes) {
  thread_local AlignedBuffer buffer;
  buffer.resize(bytes);
  return buffer.data();
}

}  // namespace baton::kernels::detail
