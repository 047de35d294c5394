// The scheduler's one idle mechanism: whoever must use the runner's owner (a re-plan, a static
// cluster's repair, a pipeline's Stats round trip) hands a task to the scheduler thread, which
// runs it between passes. run_exclusive() drains the passes in flight first (new ones wait);
// run_when_idle() only takes a moment that comes by itself, and gives up after its wait.
#include <algorithm>
#include <future>

#include "engine/serving/scheduler_pass.h"
#include "engine/serving/sequence.h"

namespace baton::serving {

struct Scheduler::IdleTask {
  std::function<bool()> fn;
  bool drain = false;  // run_exclusive(): passes are held back and drained for it
  std::promise<bool> done;
};

bool Scheduler::run_exclusive(const std::function<bool()>& fn) {
  if (std::this_thread::get_id() == thread_.get_id()) fail("Scheduler::run_exclusive called on the scheduler thread");
  IdleTask task{fn, true, {}};
  auto result = task.done.get_future();
  {
    std::lock_guard lock(mutex_);
    if (stopping_) fail("the server is shutting down");
    idle_tasks_.push_back(&task);
  }
  wake_.notify_all();
  return result.get();  // shut_down() fails a task it did not run
}

bool Scheduler::run_when_idle(const std::function<void()>& fn, std::chrono::milliseconds wait) {
  if (std::this_thread::get_id() == thread_.get_id()) fail("Scheduler::run_when_idle called on the scheduler thread");
  IdleTask task{[&fn] {
                  fn();
                  return false;
                },
                false,
                {}};
  auto result = task.done.get_future();
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return false;
    idle_tasks_.push_back(&task);
  }
  wake_.notify_all();
  if (result.wait_for(wait) != std::future_status::ready) {
    std::lock_guard lock(mutex_);
    auto it = std::find(idle_tasks_.begin(), idle_tasks_.end(), &task);
    if (it != idle_tasks_.end()) {  // not started: withdrawn
      idle_tasks_.erase(it);
      return false;
    }
  }
  return result.get();  // ran (true), fn's exception, or false: the scheduler stopped first
}

void Scheduler::replace_runner(LayerRunner& layers) {
  if (std::this_thread::get_id() != thread_.get_id())
    fail("Scheduler::replace_runner called outside the scheduler thread (use run_exclusive)");
  if (!passes_.empty()) fail("Scheduler::replace_runner called with {} passes in flight", passes_.size());
  if (layers.n_ctx() != n_ctx_) fail("the new runner holds {} positions, the scheduler {}", layers.n_ctx(), n_ctx_);
  layers_ = &layers;
}

bool Scheduler::run_idle_tasks() {
  {
    std::lock_guard lock(mutex_);
    const bool drain = std::any_of(idle_tasks_.begin(), idle_tasks_.end(), [](IdleTask* t) { return t->drain; });
    if (idle_tasks_.empty() || (!drain && !passes_.empty())) return false;
  }
  while (!passes_.empty()) finish_oldest_pass();  // a failure clears them
  for (;;) {
    IdleTask* task = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (idle_tasks_.empty()) break;
      task = idle_tasks_.front();
      idle_tasks_.pop_front();
    }
    try {
      const bool lost = task->fn() && task->drain;
      if (lost) rebuild_active();
      task->done.set_value(task->drain ? lost : true);
    } catch (...) {
      task->done.set_exception(std::current_exception());
    }
  }
  return true;
}

void Scheduler::fail_idle_tasks(const std::string& message) {
  std::lock_guard lock(mutex_);
  for (IdleTask* task : idle_tasks_) {
    if (task->drain) task->done.set_exception(std::make_exception_ptr(Error(message)));
    else task->done.set_value(false);  // run_when_idle(): not run
  }
  idle_tasks_.clear();
}

}  // namespace baton::serving
