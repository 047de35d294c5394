// A worker's speed from the passes it really computed (issue 29: a speed measured once at join
// skews the plan: identical workers announced 0.2-18.4 GFLOP/s under load). Every pass goes
// through every stage with the same tokens, so the stages' compute times over the same passes
// compare the machines on the real work; the join-time calibration only sets the scale, so
// nodes without passes (spares, newcomers) stay comparable with the measured ones.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace baton::registry {

struct StageWork {
  std::string node_id;
  double flops_per_token = 0;    // of its layers (2 x their weights' elements)
  double compute_ms = 0;         // its layers' compute, summed over the passes measured
  double tokens = 0;             // tokens of those passes
  double calibrated_gflops = 0;  // what it announced at join (0: unknown)
};

// Speeds (GFLOP/s on the calibration's scale) of the stages with at least `min_tokens` tokens
// of measured work: effective_i = flops_i x tokens_i / compute_i, times the median over those
// stages of calibrated_i / effective_i (1 when none announced a calibration). Stages below
// `min_tokens`, or with no compute time, are left out (their announced speed stands).
std::map<std::string, double> speeds_from_passes(const std::vector<StageWork>& stages, double min_tokens = 64);

}  // namespace baton::registry
