// A persistent pool of compute threads that runs one function on all of them at once.
//
// Design goals: a round trip (wake, run, join) of a few microseconds, and idle workers that
// SLEEP on a futex instead of busy-polling: on machines whose vCPUs share a physical core a
// spinning worker steals cycles from the one doing the work. Between the jobs of a pass a waiter
// first polls (with pause) for a short adaptive budget, since waking a halted vCPU costs tens of
// microseconds (thread_pool.cpp, kDefaultSpinMicros); idle longer, every thread sleeps. The futex
// calls are made directly: std::atomic::wait spins with sched_yield, which made an idle round trip
// 4x slower on the 2-vCPU development VM.
// Non-goals: task queues, futures, work stealing. Kernels split their own work by (ith, nth),
// statically or through an atomic chunk counter of their own.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace baton::kernels {

// Owns n_threads - 1 worker threads; the thread calling run() participates as thread 0.
// Thread-safety: run() may be called from any thread; concurrent callers are serialised.
// A run() issued from inside a running job (nested) executes inline as fn(0, 1).
class ThreadPool {
 public:
  // n_threads >= 1 (values below 1 are treated as 1). Spawns the workers; they sleep until run().
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }

  // Calls fn(ith, nth) for ith = 0 .. nth-1, each on its own thread (ith 0 on the caller), and
  // returns when all calls have returned. nth = min(max_threads, n_threads()) when max_threads
  // > 0, else n_threads(). If any call throws, the others still run to completion and the
  // first exception is rethrown here.
  template <class Fn>
  void run(Fn&& fn, int max_threads = 0) {
    auto trampoline = [](void* ctx, int ith, int nth) { (*static_cast<std::remove_reference_t<Fn>*>(ctx))(ith, nth); };
    run_impl(trampoline, static_cast<void*>(&fn), max_threads);
  }

 private:
  using Trampoline = void (*)(void* ctx, int ith, int nth);

  // One per worker, on its own cache line: the generation it was last told to run, and whether
  // it sleeps in the kernel (run() makes the wake syscall only then).
  struct alignas(64) WorkerSlot {
    std::atomic<uint32_t> generation{0};
    std::atomic<uint32_t> sleeping{0};
  };

  void run_impl(Trampoline fn, void* ctx, int max_threads);
  void worker_main(int ith);
  void execute(int ith, int nth) noexcept;

  int n_threads_ = 1;
  std::unique_ptr<WorkerSlot[]> slots_;  // [n_threads_], slot 0 unused (the caller)
  std::vector<std::thread> workers_;

  std::mutex run_mutex_;         // serialises callers
  Trampoline job_fn_ = nullptr;  // written by run_impl before the generation bump (release)
  void* job_ctx_ = nullptr;
  int job_nth_ = 1;
  uint32_t generation_ = 0;                       // last generation issued; guarded by run_mutex_
  alignas(64) std::atomic<uint32_t> pending_{0};  // workers still running the current job
  std::atomic<uint32_t> caller_sleeping_{0};      // run()'s caller sleeps on pending_
  int spin_us_ = 0;                               // polling budget limit (us), see kDefaultSpinMicros
  int caller_budget_ = 0;                         // the caller's adaptive polling budget (run_mutex_)
  std::atomic<bool> stop_{false};

  std::mutex error_mutex_;
  std::exception_ptr error_;  // first exception thrown by a job in this run
};

}  // namespace baton::kernels
