// The offset between this process's steady clock and one peer's, estimated from probe round
// trips on their connection (NTP's on-wire calculation and minimum-delay filter). Pure: no
// I/O, no Asio; the session feeds it and the pipeline reads it to turn a peer's timestamp
// into ours (docs/PROTOCOL.md, "Per-hop network time").
//
// A probe: we write a ClockPing at t1 (our clock), the peer reads it whole at t2 and writes
// its ClockPong at t3 (its clock), we read that whole at t4 (ours). Then
//   offset = ((t2 - t1) + (t3 - t4)) / 2      (peer clock - our clock)
//   delay  = (t4 - t1) - (t3 - t2)            (both one-way trips together)
// and |true offset - offset| <= delay / 2 whatever the split of the delay between the two
// directions (both one-way times are >= 0). The bound holds at the probe; afterwards the two
// clocks may drift apart, by at most kMaxRelativeDrift per unit of time (an assumption: quartz
// and NTP-slewed CLOCK_MONOTONIC stay well within it). estimate() returns the recent sample
// with the smallest bound delay / 2 + age * kMaxRelativeDrift.
//
// Not thread-safe (the session guards it with its mutex).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace baton::net {

struct ClockEstimate {
  int64_t offset_ns = 0;  // the peer's steady clock minus ours
  int64_t error_ns = 0;   // |true offset - offset_ns| <= error_ns (given the drift bound)
};

class ClockSync {
 public:
  static constexpr double kMaxRelativeDrift = 200e-6;  // two clocks within +-100 ppm each
  static constexpr size_t kWindow = 8;                 // samples considered

  // t1..t4 as above, in ns of the respective steady clocks. A sample whose own timestamps
  // run backwards (t4 < t1, t3 < t2) or whose delay is negative is dropped: returns false.
  bool add(int64_t t1, int64_t t2, int64_t t3, int64_t t4);

  // The best estimate at `now_ns` (our clock); nullopt before the first sample.
  std::optional<ClockEstimate> estimate(int64_t now_ns) const;

  size_t samples() const { return count_; }  // accepted so far (all time)

 private:
  struct Sample {
    int64_t offset_ns;
    int64_t delay_ns;
    int64_t at_ns;  // t4
  };
  std::array<Sample, kWindow> ring_{};
  size_t count_ = 0;
};

}  // namespace baton::net
