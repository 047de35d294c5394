#include "net/frame.h"

#include <fmt/format.h>

namespace baton::net {

namespace {

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint32_t get_u32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

}  // namespace

std::array<uint8_t, kPrefixBytes> encode_prefix(const FramePrefix& prefix) {
  std::array<uint8_t, kPrefixBytes> out{};
  put_u32(out.data() + 0, kFrameMagic);
  put_u32(out.data() + 4, prefix.header_bytes);
  put_u32(out.data() + 8, prefix.flags);
  put_u32(out.data() + 12, prefix.body_bytes);
  return out;
}

Result<FramePrefix> parse_prefix(std::span<const uint8_t, kPrefixBytes> bytes, const FrameLimits& limits) {
  uint32_t magic = get_u32(bytes.data());
  if (magic != kFrameMagic)
    return DecodeError{fmt::format("frame prefix: magic {:#010x}, expected {:#010x} (\"BTN1\")", magic, kFrameMagic)};
  FramePrefix p;
  p.header_bytes = get_u32(bytes.data() + 4);
  p.flags = get_u32(bytes.data() + 8);
  p.body_bytes = get_u32(bytes.data() + 12);
  if (p.header_bytes < kMinHeaderBytes)
    return DecodeError{
        fmt::format("frame prefix: header_bytes {} is below the minimum {}", p.header_bytes, kMinHeaderBytes)};
  if (p.header_bytes > limits.max_header_bytes)
    return DecodeError{
        fmt::format("frame prefix: header_bytes {} exceeds the limit {}", p.header_bytes, limits.max_header_bytes)};
  if ((p.flags & ~kKnownFlags) != 0)
    return DecodeError{
        fmt::format("frame prefix: unknown flag bits {:#x} (known: {:#x})", p.flags & ~kKnownFlags, kKnownFlags)};
  if (p.body_bytes > limits.max_body_bytes)
    return DecodeError{
        fmt::format("frame prefix: body_bytes {} exceeds the limit {}", p.body_bytes, limits.max_body_bytes)};
  return p;
}

}  // namespace baton::net
