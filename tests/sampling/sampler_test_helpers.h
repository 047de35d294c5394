// Shared by the sampler tests: parameters with every filter off, logits from probabilities,
// the ids of a distribution, the message of a refused call.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/sampling/sampler.h"

namespace baton::sampler_test {

inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Parameters with every filter and penalty off: plain softmax sampling at temperature 1.
inline SamplerParams plain() {
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  return p;
}

inline std::vector<float> logits_of_probs(std::initializer_list<double> probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

inline std::vector<int32_t> ids_of(const std::vector<TokenProb>& dist) {
  std::vector<int32_t> ids;
  for (const auto& t : dist) ids.push_back(t.id);
  return ids;
}

inline std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no baton::Error>";
}

}  // namespace baton::sampler_test
