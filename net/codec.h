// Message <-> frame header bytes. Its sources (codec_encode.cpp, codec_decode.cpp) are the only
// files that include the generated FlatBuffers code. Decoding never throws or aborts on remote
// bytes: FlatBuffers Verifier, then conversion to plain structs, then check_message(), else a
// DecodeError naming the problem.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "net/frame.h"
#include "net/messages.h"
#include "net/result.h"

namespace baton::net {

// FlatBuffers header for `message`, whose frame will carry a `body_bytes` body. Throws
// baton::Error if the message fails check_message() (a local bug: we never send what a
// peer would reject).
std::vector<uint8_t> encode_header(const Message& message, uint64_t body_bytes);

// Prefix and header of a frame; the body follows them on the wire unchanged. Throws
// baton::Error as encode_header, or if body_bytes does not fit the 32-bit prefix field.
struct FrameHead {
  std::array<uint8_t, kPrefixBytes> prefix;
  std::vector<uint8_t> header;
};
FrameHead encode_frame_head(const Message& message, uint64_t body_bytes);

// prefix | header | body in one buffer (tests, golden frames, small tools).
std::vector<uint8_t> encode_frame(const Message& message, std::span<const uint8_t> body = {});

// Header bytes (exactly the header_bytes of the prefix) of a frame with a `body_bytes` body.
Result<Message> decode_header(std::span<const uint8_t> header, uint64_t body_bytes);

// A whole plaintext frame that must be exactly prefix + header + body long (a sealed one is
// refused: only a session holding its key and counter can open it).
struct DecodedFrame {
  Message message;
  std::span<const uint8_t> body;  // points into the input
};
Result<DecodedFrame> decode_frame(std::span<const uint8_t> frame, const FrameLimits& limits);

}  // namespace baton::net
