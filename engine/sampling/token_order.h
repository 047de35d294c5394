// The order the sampler and the log-probability report rank tokens in.
#pragma once

#include <cstdint>
#include <limits>

namespace baton {

// A banned or impossible token's logit.
inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Best first: higher logit, then lower id. A total order, so every selection is deterministic.
inline bool ranks_before(float la, int32_t ia, float lb, int32_t ib) { return la > lb || (la == lb && ia < ib); }

}  // namespace baton
