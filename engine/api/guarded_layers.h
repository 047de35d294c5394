// A LayerRunner wrapper that lets another thread use the runner's owner while it is idle:
// pipeline::Cluster answers one request at a time (a Stats round trip must not interleave
// with forward passes), so the HTTP threads ask for pipeline stats through when_idle(), which
// runs only when no pass is in flight and holds new passes back meanwhile.
// Thread-safety: the LayerRunner methods are called by the scheduler's thread; when_idle()
// from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

#include "engine/runtime/layer_runner.h"

namespace baton::api {

class GuardedLayers : public LayerRunner {
 public:
  explicit GuardedLayers(LayerRunner& inner) : inner_(inner) {}

  void forward(const TokenBatch& batch, std::vector<float>& hidden, std::vector<float>& out_rows) override;
  void reset_sequence(uint64_t seq_id) override;
  int64_t n_ctx() const override { return inner_.n_ctx(); }
  int max_in_flight() const override { return inner_.max_in_flight(); }
  void submit(const TokenBatch& batch, std::vector<float>& hidden) override;
  void finish(std::vector<float>& out_rows) override;

  // Runs fn once no pass is in flight, waiting up to `wait` for that; false (fn not run) when
  // the runner stayed busy. Exceptions from fn propagate.
  bool when_idle(const std::function<void()>& fn, std::chrono::milliseconds wait);

 private:
  // Runs one call into the runner; `delta` is added to in_flight_ after it returns.
  template <class F>
  void call(F&& f, int delta);

  LayerRunner& inner_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int in_flight_ = 0;
  bool calling_ = false;   // the scheduler thread is inside the runner
  bool borrowed_ = false;  // when_idle's fn is running
};

}  // namespace baton::api
