// The scheduler's private pieces shared by its files (scheduler.cpp: requests and failures,
// scheduler_admission.cpp: slots and cached prefixes, scheduler_passes.cpp: building and
// finishing micro-batches, scheduler_idle.cpp: the idle mechanism). Not for other users.
#pragma once

#include <chrono>
#include <span>
#include <vector>

#include "engine/serving/scheduler.h"

namespace baton::serving {

// One micro-batch handed to the runner and not finished yet. The batch and the embeddings stay
// alive (at a fixed address) until finish(), whatever the runner does with them.
struct Scheduler::Pass {
  struct Part {
    ActiveSequence* seq;
    std::span<const int32_t> tokens;  // the sequence's tokens in this pass
    bool output;                      // its last token's row is wanted (prompt done / decode)
    bool prompt;                      // tokens of its prompt
    bool decode = false;              // a generated token and its draft: every row is an output
  };
  TokenBatch batch;
  std::vector<float> hidden;  // [batch.size(), n_embd]
  std::vector<Part> parts;    // in batch order
};

inline double scheduler_seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace baton::serving
