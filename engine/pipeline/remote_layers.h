// The LayerRunner of a pipeline::Chain: forward passes along the chain of workers, so the
// Generator, the scheduler and the bench work unchanged on a cluster; submit()/finish() keep
// several micro-batches in the chain at once (the serving scheduler).
// Not thread-safe: one thread at a time (the chain's runner thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "engine/runtime/layer_runner.h"
#include "net/node.h"

namespace baton::pipeline {

class Chain;

class RemoteLayers : public LayerRunner {
 public:
  explicit RemoteLayers(Chain& chain) : chain_(chain) {}
  // submit() + finish(); refused while submitted passes are unfinished.
  void forward(const TokenBatch& batch, std::vector<float>& hidden, std::vector<float>& out_rows) override;
  // ResetSequence to the first stage; every stage applies it and passes it on along the chain,
  // ordered with the Forwards: it takes effect after every pass submitted before it and before
  // every pass submitted after it, at every stage. Does not wait (no round trip).
  void reset_sequence(uint64_t seq_id) override;
  int64_t n_ctx() const override;

  // Sends a Forward (micro-batch id = a counter) to the first stage without waiting.
  // finish() waits for the oldest pass's Hidden (replies are matched by id; the chain keeps
  // them in order). A closed connection, an ErrorReport about an unfinished pass, or the
  // request timeout of the oldest pass throws baton::Error naming the node, and every
  // unfinished pass is lost.
  int max_in_flight() const override;
  void submit(const TokenBatch& batch, std::vector<float>& hidden) override;
  void finish(std::vector<float>& out_rows) override;
  size_t in_flight() const { return passes_.size(); }

 private:
  friend class Chain;
  struct Pass {
    uint64_t id = 0;
    size_t n_tokens = 0, n_outputs = 0;
    std::chrono::steady_clock::time_point sent;
    std::optional<net::Incoming> reply;  // its Hidden, once arrived
  };
  // Files a Hidden with its pass (drops stale ones); an ErrorReport about an unfinished pass
  // (or about none in particular) fails them all.
  void take(net::Incoming& in);
  [[noreturn]] void fail_all(const std::string& why);

  Chain& chain_;
  uint64_t next_micro_batch_ = 1;
  std::deque<Pass> passes_;
};

}  // namespace baton::pipeline
