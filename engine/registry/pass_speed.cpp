#include "engine/registry/pass_speed.h"

#include <algorithm>

namespace baton::registry {

std::map<std::string, double> speeds_from_passes(const std::vector<StageWork>& stages, double min_tokens) {
  std::map<std::string, double> effective;  // GFLOP/s on the real work
  std::vector<double> scales;               // calibrated / effective
  for (const StageWork& s : stages) {
    if (s.tokens < min_tokens || s.tokens <= 0 || s.compute_ms <= 0 || s.flops_per_token <= 0) continue;
    const double gflops = s.flops_per_token * s.tokens / (s.compute_ms * 1e-3) / 1e9;
    effective[s.node_id] = gflops;
    if (s.calibrated_gflops > 0) scales.push_back(s.calibrated_gflops / gflops);
  }
  double scale = 1;
  if (!scales.empty()) {
    const auto mid = scales.begin() + static_cast<std::ptrdiff_t>(scales.size() / 2);
    std::nth_element(scales.begin(), mid, scales.end());
    scale = *mid;
  }
  for (auto& [id, gflops] : effective) gflops *= scale;
  return effective;
}

}  // namespace baton::registry
