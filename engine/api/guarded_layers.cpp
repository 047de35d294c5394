#include "engine/api/guarded_layers.h"

namespace baton::api {

template <class F>
void GuardedLayers::call(F&& f, int delta) {
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !borrowed_; });
    calling_ = true;
  }
  try {
    f();
  } catch (...) {
    std::lock_guard lock(mutex_);
    calling_ = false;
    in_flight_ = 0;  // after a failure every unfinished pass is lost (LayerRunner contract)
    changed_.notify_all();
    throw;
  }
  std::lock_guard lock(mutex_);
  calling_ = false;
  in_flight_ += delta;
  if (in_flight_ < 0) in_flight_ = 0;
  changed_.notify_all();
}

void GuardedLayers::forward(const TokenBatch& batch, std::vector<float>& hidden, std::vector<float>& out_rows) {
  call([&] { inner_.forward(batch, hidden, out_rows); }, 0);
}

void GuardedLayers::reset_sequence(uint64_t seq_id) {
  call([&] { inner_.reset_sequence(seq_id); }, 0);
}

void GuardedLayers::submit(const TokenBatch& batch, std::vector<float>& hidden) {
  call([&] { inner_.submit(batch, hidden); }, 1);
}

void GuardedLayers::finish(std::vector<float>& out_rows) {
  call([&] { inner_.finish(out_rows); }, -1);
}

bool GuardedLayers::when_idle(const std::function<void()>& fn, std::chrono::milliseconds wait) {
  {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, wait, [&] { return in_flight_ == 0 && !calling_ && !borrowed_; })) return false;
    borrowed_ = true;
  }
  struct Release {
    GuardedLayers& g;
    ~Release() {
      std::lock_guard lock(g.mutex_);
      g.borrowed_ = false;
      g.changed_.notify_all();
    }
  } release{*this};
  fn();
  return true;
}

}  // namespace baton::api
