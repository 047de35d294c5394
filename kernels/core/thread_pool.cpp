#include "kernels/core/thread_pool.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
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

// How long a waiting thread polls (with pause) before it sleeps in the kernel. Waking a sleeping
// vCPU of a VM costs tens of microseconds, and a decode step runs ~200 jobs a few hundred
// microseconds apart (docs/BENCHMARKS.md, Kernel notes). Idle longer than this, every thread
// sleeps (test_thread_pool checks it).
// BATON_POOL_SPIN_US overrides it (0 = sleep at once, the behaviour before).
constexpr int kDefaultSpinMicros = 50;

int spin_micros_from_env() {
  const char* e = std::getenv("BATON_POOL_SPIN_US");
  if (!e || !*e) return kDefaultSpinMicros;
  try {
    return std::clamp(std::stoi(e), 0, 100000);
  } catch (const std::exception&) {
    return kDefaultSpinMicros;
  }
}

// Polls `word` while it holds `expected`, for up to `budget` microseconds; true if it changed.
// The budget adapts per waiter: halved (down to 1 us) when a poll runs out, doubled (up to
// `limit`) when the other side arrives in time. On a busy machine the other thread is often
// descheduled, polls run out and the waiter soon sleeps at once; on an idle one the short
// gaps between jobs are bridged.
bool poll_while(const std::atomic<uint32_t>& word, uint32_t expected, int& budget, int limit) {
  if (limit <= 0) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(budget);
  for (;;) {
    for (int i = 0; i < 32; ++i) {
      if (word.load(std::memory_order_acquire) != expected) {
        budget = std::min(limit, 2 * budget);
        return true;
      }
      _mm_pause();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      budget = std::max(1, budget / 2);
      return false;
    }
  }
}

// The pool whose job this thread is running right now (nested run() detection).
thread_local const ThreadPool* tl_running_pool = nullptr;

struct RunningScope {
  explicit RunningScope(const ThreadPool* pool) : saved(tl_running_pool) { tl_running_pool = pool; }
  ~RunningScope() { tl_running_pool = saved; }
  const ThreadPool* saved;
};

}  // namespace

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(std::max(1, n_threads)), spin_us_(spin_micros_from_env()), caller_budget_(spin_us_) {
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
  int budget = spin_us_;
  for (;;) {
    // Polls for a while, then sleeps in the kernel until run() bumps this worker's generation.
    // sleeping is set before the last check and run() reads it after its bump (both seq_cst), so
    // either this thread sees the new generation or run() sees it asleep and wakes it.
    uint32_t now = slot.load(std::memory_order_acquire);
    if (now == seen && poll_while(slot, seen, budget, spin_us_)) now = slot.load(std::memory_order_acquire);
    while (now == seen) {
      slots_[ith].sleeping.store(1, std::memory_order_seq_cst);
      if (slot.load(std::memory_order_seq_cst) == seen) futex_wait(slot, seen);
      slots_[ith].sleeping.store(0, std::memory_order_relaxed);
      now = slot.load(std::memory_order_acquire);
    }
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    execute(ith, job_nth_);
    if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 && caller_sleeping_.load(std::memory_order_seq_cst))
      futex_wake_one(pending_);
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
    slots_[ith].generation.store(generation_, std::memory_order_seq_cst);
    if (slots_[ith].sleeping.load(std::memory_order_seq_cst)) futex_wake_one(slots_[ith].generation);
  }

  execute(0, nth);

  uint32_t left = pending_.load(std::memory_order_acquire);
  if (left != 0 && poll_while(pending_, left, caller_budget_, spin_us_))
    left = pending_.load(std::memory_order_acquire);
  while (left != 0) {
    caller_sleeping_.store(1, std::memory_order_seq_cst);
    if (pending_.load(std::memory_order_seq_cst) == left) futex_wait(pending_, left);
    caller_sleeping_.store(0, std::memory_order_relaxed);
    left = pending_.load(std::memory_order_acquire);
  }
  if (error_) {
    std::exception_ptr e = std::exchange(error_, nullptr);
    std::rethrow_exception(e);
  }
}

}  // namespace baton::kernels
