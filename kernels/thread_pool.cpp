#include "kernels/thread_pool.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

namespace baton::kernels {
namespace {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free,
              "futex words must be plain 32-bit integers");

// Sleeps while `word` holds `expected` (returns at once if it does not; may wake spuriously).
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

void futex_wake_one(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

// The pool whose job this thread is running right now (nested run() detection).
thread_local const ThreadPool* tl_running_pool = nullptr;

struct RunningScope {
  explicit RunningScope(const ThreadPool* pool) : saved(tl_running_pool) { tl_running_pool = pool; }
  ~RunningScope() { tl_running_pool = saved; }
  const ThreadPool* saved;
};

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  slots_ = std::make_unique<WorkerSlot[]>(static_cast<size_t>(n_threads_));
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int ith = 1; ith < n_threads_; ++ith) workers_.emplace_back([this, ith] { worker_main(ith); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(run_mutex_);
    stop_.store(true, std::memory_order_release);
    ++generation_;
    for (int ith = 1; ith < n_threads_; ++ith) {
      slots_[ith].generation.store(generation_, std::memory_order_release);
      futex_wake_one(slots_[ith].generation);
    }
  }
  for (auto& t : workers_) t.join();
}

void ThreadPool::execute(int ith, int nth) noexcept {
  RunningScope scope(this);
  try {
    job_fn_(job_ctx_, ith, nth);
  } catch (...) {
    std::lock_guard lock(error_mutex_);
    if (!error_) error_ = std::current_exception();
  }
}

void ThreadPool::worker_main(int ith) {
  std::atomic<uint32_t>& slot = slots_[ith].generation;
  uint32_t seen = 0;
  for (;;) {
    // Sleeps in the kernel until run() bumps this worker's generation.
    uint32_t now = slot.load(std::memory_order_acquire);
    while (now == seen) {
      futex_wait(slot, seen);
      now = slot.load(std::memory_order_acquire);
    }
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    execute(ith, job_nth_);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) futex_wake_one(pending_);
  }
}

void ThreadPool::run_impl(Trampoline fn, void* ctx, int max_threads) {
  int nth = max_threads > 0 ? std::min(max_threads, n_threads_) : n_threads_;
  if (tl_running_pool == this || nth == 1) {
    // Nested call from inside a job, or nothing to share: run inline on this thread.
    RunningScope scope(this);
    fn(ctx, 0, 1);
    return;
  }

  std::lock_guard lock(run_mutex_);
  job_fn_ = fn;
  job_ctx_ = ctx;
  job_nth_ = nth;
  error_ = nullptr;
  pending_.store(static_cast<uint32_t>(nth - 1), std::memory_order_relaxed);
  ++generation_;
  for (int ith = 1; ith < nth; ++ith) {
    slots_[ith].generation.store(generation_, std::memory_order_release);
    futex_wake_one(slots_[ith].generation);
  }

  execute(0, nth);

  for (uint32_t left = pending_.load(std::memory_order_acquire); left != 0;
       left = pending_.load(std::memory_order_acquire)) {
    futex_wait(pending_, left);
  }
  if (error_) {
    std::exception_ptr e = std::exchange(error_, nullptr);
    std::rethrow_exception(e);
  }
}

}  // namespace baton::kernels
