// Bounds on what a cluster description may say, shared by the YAML parser (engine-coordinator,
// engine-ctl doctor) and the registry (join messages, etcd records, the registry file): a
// hostile or mistaken value is refused with a message instead of overflowing a duration,
// exhausting memory or injecting lines into the logs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace baton {

inline constexpr size_t kMaxClusterConfigBytes = 1 << 20;  // the YAML file
inline constexpr size_t kMaxClusterNodes = 1024;           // nodes listed or registered
inline constexpr size_t kMaxNodeIdBytes = 128;
inline constexpr size_t kMaxHostBytes = 255;  // a DNS name's limit

// A duration field's sane range, in seconds (both ends inclusive).
struct SecondsRange {
  double min, max;
};
inline constexpr SecondsRange kConnectTimeoutRange{0.1, 86400};
inline constexpr SecondsRange kLoadTimeoutRange{1, 86400};
inline constexpr SecondsRange kJoinTimeoutRange{0.1, 86400};
inline constexpr SecondsRange kHeartbeatTimeoutRange{0.1, 3600};

// "" when `seconds` is finite and within `range`, else what is wrong with `field`.
std::string seconds_problem(std::string_view field, double seconds, SecondsRange range);

// "" when `text` is a sane identifier or host name: 1..max_bytes bytes of valid UTF-8 with no
// control character (NUL, newline, tab, DEL, C1) and no space; else what is wrong with `field`
// (the value shown escaped and cut short).
// With allow_space, spaces pass (free text such as a model identity).
std::string name_problem(std::string_view field, std::string_view text, size_t max_bytes, bool allow_space = false);

// The value escaped for a message: control and non-ASCII bytes as \xNN, at most ~80 characters.
std::string printable(std::string_view text);

}  // namespace baton
