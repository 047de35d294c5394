#include "net/clock_sync.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace baton::net {

bool ClockSync::add(int64_t t1, int64_t t2, int64_t t3, int64_t t4) {
  if (t4 < t1 || t3 < t2) return false;
  // Differences of the same clock first, so nothing overflows whatever the clocks' epochs.
  const int64_t round_trip = t4 - t1;
  const int64_t held = t3 - t2;
  if (held > round_trip) return false;
  const int64_t delay = round_trip - held;
  // ((t2 - t1) + (t3 - t4)) / 2 = (t2 + t3) / 2 - (t1 + t4) / 2: the peer's midpoint minus
  // ours, each taken within one clock (rounding: < 1 ns, added to the bound).
  const int64_t ours_mid = t1 + round_trip / 2;
  const int64_t peer_mid = t2 + held / 2;
  ring_[count_ % kWindow] = {peer_mid - ours_mid, delay, t4};
  ++count_;
  return true;
}

std::optional<ClockEstimate> ClockSync::estimate(int64_t now_ns) const {
  const size_t n = std::min(count_, kWindow);
  if (n == 0) return std::nullopt;
  std::optional<ClockEstimate> best;
  for (size_t i = 0; i < n; ++i) {
    const Sample& s = ring_[i];
    const double age = static_cast<double>(std::max<int64_t>(0, now_ns - s.at_ns));
    const double bound = static_cast<double>(s.delay_ns) / 2.0 + age * kMaxRelativeDrift + 1.0;
    const auto error = static_cast<int64_t>(std::ceil(std::min(bound, 9.0e18)));
    if (!best || error < best->error_ns) best = ClockEstimate{s.offset_ns, error};
  }
  return best;
}

}  // namespace baton::net
