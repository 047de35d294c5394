#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/core/thread_pool.h"

using baton::kernels::ThreadPool;

TEST_CASE("thread pool runs the function once on every thread with distinct indices") {
  for (int n : {1, 2, 3, 5}) {
    ThreadPool pool(n);
    REQUIRE(pool.n_threads() == n);
    for (int round = 0; round < 200; ++round) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<int> wrong_nth{0};
      pool.run([&](int ith, int nth) {
        if (nth != n) wrong_nth++;
        hits[static_cast<size_t>(ith)]++;
      });
      REQUIRE(wrong_nth == 0);
      for (auto& h : hits) REQUIRE(h == 1);
    }
  }
}

TEST_CASE("thread pool runs the caller as thread 0 and returns only after every thread finished") {
  ThreadPool pool(3);
  const auto caller = std::this_thread::get_id();
  std::atomic<int> done{0};
  std::atomic<bool> zero_on_caller{false};
  pool.run([&](int ith, int) {
    if (ith == 0) zero_on_caller = std::this_thread::get_id() == caller;
    if (ith == 2) std::this_thread::sleep_for(std::chrono::milliseconds(30));
    done++;
  });
  CHECK(done == 3);
  CHECK(zero_on_caller);
}

TEST_CASE("thread pool can be limited to fewer threads per run") {
  ThreadPool pool(4);
  std::atomic<int> calls{0};
  std::atomic<int> seen_nth{0};
  pool.run(
      [&](int, int nth) {
        calls++;
        seen_nth = nth;
      },
      2);
  CHECK(calls == 2);
  CHECK(seen_nth == 2);
  calls = 0;
  pool.run([&](int, int) { calls++; });  // the idle workers still answer afterwards
  CHECK(calls == 4);
}

TEST_CASE("an exception in a job reaches the caller and the pool keeps working") {
  ThreadPool pool(3);
  for (int thrower : {0, 1, 2}) {
    std::atomic<int> finished{0};
    REQUIRE_THROWS_WITH(pool.run([&](int ith, int) {
      if (ith == thrower) throw std::runtime_error("boom from a job");
      finished++;
    }),
                        "boom from a job");
    CHECK(finished == 2);
  }
  std::atomic<int> calls{0};
  pool.run([&](int, int) { calls++; });
  CHECK(calls == 3);
}

TEST_CASE("a run issued from inside a job executes inline instead of deadlocking") {
  ThreadPool pool(2);
  std::atomic<int> inner_calls{0};
  std::atomic<int> inner_nth{0};
  pool.run([&](int, int) {
    pool.run([&](int, int nth) {
      inner_calls++;
      inner_nth = nth;
    });
  });
  CHECK(inner_calls == 2);  // once per outer thread
  CHECK(inner_nth == 1);
}

TEST_CASE("concurrent callers of one pool are serialised") {
  ThreadPool pool(2);
  std::atomic<int> total{0};
  std::atomic<int> inside{0};
  std::atomic<int> max_inside{0};
  auto caller = [&] {
    for (int i = 0; i < 300; ++i) {
      pool.run([&](int, int) {
        int now = ++inside;
        int prev = max_inside.load();
        while (now > prev && !max_inside.compare_exchange_weak(prev, now)) {
        }
        total++;
        --inside;
      });
    }
  };
  std::thread a(caller), b(caller);
  a.join();
  b.join();
  CHECK(total == 2 * 300 * 2);
  CHECK(max_inside <= 2);
}

TEST_CASE("idle workers sleep instead of spinning") {
  ThreadPool pool(2);
  pool.run([](int, int) {});
  // With one worker asleep for 200 ms, this process should use far less than the 200 ms of
  // CPU a spinning worker would burn.
  std::clock_t before = std::clock();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  double cpu_ms = 1000.0 * static_cast<double>(std::clock() - before) / CLOCKS_PER_SEC;
  CHECK(cpu_ms < 50.0);
}

TEST_CASE("with polling before sleep, every run is joined and idle workers still sleep") {
  // Polling only bridges short gaps between jobs; the protocol that decides whether a wake
  // syscall is needed must never lose a wake-up, whichever side polls out first.
  ::setenv("BATON_POOL_SPIN_US", "30", 1);
  ThreadPool pool(3);
  ::unsetenv("BATON_POOL_SPIN_US");
  std::atomic<int64_t> total{0};
  for (int i = 0; i < 3000; ++i) {
    pool.run([&](int ith, int) {
      // Uneven job lengths: sometimes the caller waits, sometimes the workers do, on both sides
      // of the 30 us poll.
      if ((i + ith) % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
      total.fetch_add(ith + 1, std::memory_order_relaxed);
    });
    if (i % 100 == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  CHECK(total.load() == 3000 * (1 + 2 + 3));
  std::clock_t before = std::clock();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(1000.0 * static_cast<double>(std::clock() - before) / CLOCKS_PER_SEC < 50.0);
}
