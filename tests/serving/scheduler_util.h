// Helpers of the scheduler tests: the stories260K model, solo reference runs through
// Generator, draining a RequestHandle, and LayerRunner wrappers around LocalLayers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/local_model.h"
#include "engine/serving/scheduler.h"
#include "fixtures.h"

namespace baton::serving::test {

// `relative`: a model under the shared fixtures directory.
inline std::unique_ptr<LocalModel> load_model(const std::string& relative, int max_sequences, int64_t n_ctx = 256) {
  LocalModelOptions options;
  options.threads = 2;
  options.n_ctx = n_ctx;
  options.max_sequences = max_sequences;
  return std::make_unique<LocalModel>(baton::test::shared_path(relative), options);
}

inline std::unique_ptr<LocalModel> load_stories(int max_sequences, int64_t n_ctx = 256) {
  return load_model("models/stories260K.gguf", max_sequences, n_ctx);
}

struct Outcome {
  std::vector<TokenEvent> events;
  CompletionSummary summary;
  std::string text() const {
    std::string s;
    for (const auto& e : events) s += e.text;
    return s;
  }
  std::vector<int32_t> tokens() const {
    std::vector<int32_t> t;
    for (const auto& e : events) t.push_back(e.token);
    return t;
  }
};

// Takes every event until the request ends; throws if it stalls for 20 s.
inline Outcome drain(RequestHandle& handle) {
  Outcome out;
  for (;;) {
    TokenEvent event;
    auto poll = handle.next(event, std::chrono::milliseconds(20000));
    if (poll == RequestHandle::Poll::kTimeout) fail("request stalled: no event for 20 s");
    if (poll == RequestHandle::Poll::kDone) break;
    out.events.push_back(std::move(event));
  }
  out.summary = handle.summary();
  return out;
}

// The same request alone through Generator (seq id far from the scheduler's).
// n_batch: the prompt chunk size of the scheduler compared with (results depend on it).
inline GenerationResult solo(LocalModel& model, const CompletionRequest& request, int n_batch = 512) {
  GenerateOptions options;
  options.n_batch = n_batch;
  options.n_predict = request.max_tokens;
  options.sampling = request.sampling;
  options.n_top_logprobs = request.n_top_logprobs > 0 ? request.n_top_logprobs : (request.logprobs ? 1 : 0);
  if (!request.ignore_eos) options.is_end_of_generation = [&model](int32_t id) { return model.tokenizer().is_eog(id); };
  Generator generator(model.head(), model.layers());
  return generator.generate(1u << 30, request.prompt, options);
}

// Bitwise comparison of floats (a NaN would compare equal to itself here).
inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Every wrapper forwards to a LocalLayers.
class WrappedLayers : public LayerRunner {
 public:
  explicit WrappedLayers(LocalLayers& inner) : inner_(inner) {}
  void forward(const TokenBatch& batch, std::vector<float>& hidden, std::vector<float>& out_rows) override {
    before_forward(batch);
    inner_.forward(batch, hidden, out_rows);
  }
  void reset_sequence(uint64_t seq_id) override { inner_.reset_sequence(seq_id); }
  int64_t n_ctx() const override { return inner_.n_ctx(); }

 protected:
  virtual void before_forward(const TokenBatch&) {}
  LocalLayers& inner_;
};

// A stand-in for a 3-stage pipeline: submit() only queues the pass (copying batch and hidden),
// finish() runs the OLDEST queued one. Passes therefore complete strictly in submission order
// and up to three are unfinished at once, which exercises the scheduler's ordering.
class QueueingLayers : public WrappedLayers {
 public:
  using WrappedLayers::WrappedLayers;
  int max_in_flight() const override { return 3; }
  void submit(const TokenBatch& batch, std::vector<float>& hidden) override {
    {
      std::unique_lock lock(hold_mutex_);
      hold_cv_.wait(lock, [&] { return !held_; });
    }
    if (queued_.size() >= 3) fail("QueueingLayers: a 4th pass was submitted while 3 are unfinished");
    // A sequence may be in several unfinished passes only as consecutive prompt pieces: later
    // positions than everything it has in flight, and none of those passes wants its output.
    for (const auto& q : queued_)
      for (size_t i = 0; i < batch.size(); ++i)
        for (size_t j = 0; j < q.batch.size(); ++j) {
          if (batch.seq_ids[i] != q.batch.seq_ids[j]) continue;
          if (q.batch.output[j])
            fail("QueueingLayers: sequence {} fed again before its output came back", batch.seq_ids[i]);
          if (q.batch.positions[j] >= batch.positions[i])
            fail("QueueingLayers: sequence {} at position {} after position {} in flight", batch.seq_ids[i],
                 batch.positions[i], q.batch.positions[j]);
        }
    queued_.push_back({batch, hidden});
    max_queued = std::max(max_queued, queued_.size());
    max_rows_per_pass = std::max(max_rows_per_pass, batch.size());
  }
  void finish(std::vector<float>& out_rows) override {
    if (queued_.empty()) fail("QueueingLayers: finish() without a pass");
    if (fail_finish_after >= 0 && finished_++ >= fail_finish_after) {
      queued_.clear();  // after a failure every unfinished pass is lost
      fail("node 'w3' (10.0.0.3:7100): no answer for 30 s");
    }
    auto pass = std::move(queued_.front());
    queued_.pop_front();
    forward(pass.batch, pass.hidden, out_rows);
  }
  // While held, submit() waits (so that requests can be queued before the first pass ends).
  void hold(bool held) {
    {
      std::lock_guard lock(hold_mutex_);
      held_ = held;
    }
    hold_cv_.notify_all();
  }
  size_t max_queued = 0;
  size_t max_rows_per_pass = 0;
  int fail_finish_after = -1;  // >= 0: finish() throws once this many passes have finished

 private:
  std::mutex hold_mutex_;
  std::condition_variable hold_cv_;
  bool held_ = false;
  int finished_ = 0;
  struct Queued {
    TokenBatch batch;
    std::vector<float> hidden;
  };
  std::deque<Queued> queued_;
};

// Forwards slowly, or waits while closed, or throws while armed (a failing remote node).
class ControlledLayers : public WrappedLayers {
 public:
  using WrappedLayers::WrappedLayers;
  void set_delay(std::chrono::milliseconds delay) { delay_ = delay; }
  void close() {
    std::lock_guard lock(mutex_);
    open_ = false;
  }
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void arm_failure(std::string message) {
    std::lock_guard lock(mutex_);
    failure_ = std::move(message);
  }
  std::atomic<int> passes{0};
  std::atomic<int> entered{0};  // forward() calls begun, including one waiting while closed

 protected:
  void before_forward(const TokenBatch&) override {
    ++entered;
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return open_; });
    ++passes;
    if (!failure_.empty()) throw Error(failure_);
    lock.unlock();
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = true;
  std::string failure_;
  std::chrono::milliseconds delay_{0};
};

}  // namespace baton::serving::test
