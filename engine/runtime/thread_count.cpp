#include "engine/runtime/thread_count.h"

#include <thread>

namespace baton {

int default_thread_count() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace baton
