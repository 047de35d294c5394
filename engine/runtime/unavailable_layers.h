// The runner of a coordinator that has no layers to run right now (a dynamic cluster between a
// dropped pipeline and the next one that loads): every pass fails at once with the reason, so
// the scheduler's repair (or the request's error) says why instead of waiting.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "engine/base/error.h"
#include "engine/runtime/layer_runner.h"

namespace baton {

class UnavailableLayers : public LayerRunner {
 public:
  // `why` is asked at the moment of each failure (the reason may change meanwhile).
  UnavailableLayers(int64_t n_ctx, std::function<std::string()> why) : n_ctx_(n_ctx), why_(std::move(why)) {}

  void forward(const TokenBatch&, std::vector<float>&, std::vector<float>&) override { refuse(); }
  void reset_sequence(uint64_t) override {}  // nothing is held
  int64_t n_ctx() const override { return n_ctx_; }
  void submit(const TokenBatch&, std::vector<float>&) override { refuse(); }
  void finish(std::vector<float>&) override { refuse(); }

 private:
  [[noreturn]] void refuse() const { fail("{}", why_()); }

  int64_t n_ctx_;
  std::function<std::string()> why_;
};

}  // namespace baton
