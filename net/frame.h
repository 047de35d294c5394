// The fixed 16-byte frame prefix. Pure functions, no I/O.
//
//   offset 0  u32 magic        "BTN1" as bytes 42 54 4E 31
//   offset 4  u32 header_bytes  length of the FlatBuffers header that follows (>= 8)
//   offset 8  u32 flags         bit 0 (kFlagSealed): header and body are AES-256-GCM sealed
//                                and a 16-byte tag follows the body (net/wire_crypto.h);
//                                every other bit must be 0
//   offset 12 u32 body_bytes    length of the raw body after the header
//
// All little-endian. A frame is prefix | header | body. Limits are checked on the prefix,
// before anything is allocated for the header or the body.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "net/result.h"

namespace baton::net {

inline constexpr size_t kPrefixBytes = 16;
inline constexpr uint32_t kFrameMagic = 0x314E5442;   // bytes 'B' 'T' 'N' '1'
inline constexpr uint32_t kMinHeaderBytes = 8;        // smallest possible FlatBuffer with an id
inline constexpr uint32_t kFlagSealed = 1;            // since protocol version 3
inline constexpr uint32_t kKnownFlags = kFlagSealed;  // bits a reader accepts

struct FrameLimits {
  uint32_t max_header_bytes = 1u << 20;  // 1 MiB
  uint32_t max_body_bytes = 256u << 20;  // 256 MiB
};

struct FramePrefix {
  uint32_t header_bytes = 0;
  uint32_t flags = 0;
  uint32_t body_bytes = 0;
  bool operator==(const FramePrefix&) const = default;
};

std::array<uint8_t, kPrefixBytes> encode_prefix(const FramePrefix& prefix);

// Checks magic, flags and both lengths against `limits`; the error names the field and
// the expected vs actual value.
Result<FramePrefix> parse_prefix(std::span<const uint8_t, kPrefixBytes> bytes, const FrameLimits& limits);

}  // namespace baton::net
