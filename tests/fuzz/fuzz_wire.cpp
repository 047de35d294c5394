// libFuzzer target: any byte string as a whole frame (prefix, header, body) through the frame
// decoder and the message checker (net/codec, net/frame, check_message). A refusal
// (DecodeError) is the expected outcome for most inputs. Whatever decodes must also encode
// again (the encoder throws on a message check_message rejects) and decode to the same
// message: a crash, a sanitizer report, an exception or a round trip that differs is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "net/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace baton::net;
  const std::span<const uint8_t> input(data, size);
  auto decoded = decode_frame(input, FrameLimits{});
  if (!decoded) {
    // The header alone too, as the session reads it (prefix already checked): the body size
    // it claims is taken from the first bytes so tensor bounds get exercised.
    if (size >= 4) {
      const uint64_t body = uint64_t{data[0]} | uint64_t{data[1]} << 8 | uint64_t{data[2]} << 16;
      (void)decode_header(input.subspan(4), body);
    }
    return 0;
  }
  const std::vector<uint8_t> again = encode_frame(decoded->message, decoded->body);
  auto redecoded = decode_frame(again, FrameLimits{});
  if (!redecoded || !(redecoded->message == decoded->message)) std::abort();
  return 0;
}
