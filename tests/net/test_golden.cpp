// Golden encoded frames: pin the wire protocol. If one of these changes, old peers can no
// longer read new frames (or the reverse): bump kProtocolVersion or fix the change. Decoding
// the committed bytes checks that today's decoder still reads what the current version wrote.
// Version 3 changed only the Hello (its protocol_version field); sealing happens after encoding.
// Version 4 changed the Hello (version) and, through their samples' new typed fields, the Prepare
// (n_ctx, max_sequences), Forward and Hidden (sent_ns, timings) and ErrorReport (micro_batch_id);
// every other frame kept its bytes.
// Regenerate (only for a deliberate protocol change): BATON_PRINT_GOLDEN=1 ./test_net "[golden]"
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

#include "net/codec.h"
#include "net_samples.h"

using namespace baton::net;
using namespace baton::net::test;

namespace {

// One per message type, in the order of all_samples() (the Message variant order).
const char* const kGolden[] = {
#include "golden_frames.inc"
};

}  // namespace

TEST_CASE("every sample message encodes to its committed golden frame", "[golden]") {
  auto samples = all_samples();
  if (std::getenv("BATON_PRINT_GOLDEN")) {
    for (const auto& s : samples)
      std::printf("    // %s\n    \"%s\",\n", std::string(message_name(s.message)).c_str(),
                  to_hex(encode_frame(s.message, s.body)).c_str());
  }
  REQUIRE(std::size(kGolden) == samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    INFO(message_name(samples[i].message));
    CHECK(to_hex(encode_frame(samples[i].message, samples[i].body)) == kGolden[i]);
  }
}

TEST_CASE("committed golden frames decode to the sample messages", "[golden]") {
  auto samples = all_samples();
  REQUIRE(std::size(kGolden) == samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    INFO(message_name(samples[i].message));
    auto bytes = from_hex(kGolden[i]);
    auto decoded = decode_frame(bytes, FrameLimits{});
    REQUIRE(decoded.ok());
    CHECK(decoded->message == samples[i].message);
    CHECK(std::vector<uint8_t>(decoded->body.begin(), decoded->body.end()) == samples[i].body);
  }
}

TEST_CASE("a Hello frame keeps its frozen layout", "[golden]") {
  // Prefix: magic, header length, no flags, no body. Spelled out byte by byte for readers.
  auto frame = encode_frame(Hello{1, 0, "n", Role::kWorker, AuthMode::kHmacSha256});
  REQUIRE(frame.size() > 16);
  CHECK(frame[0] == 'B');
  CHECK(frame[1] == 'T');
  CHECK(frame[2] == 'N');
  CHECK(frame[3] == '1');
  uint32_t header_len = frame[4] | frame[5] << 8 | frame[6] << 16 | uint32_t{frame[7]} << 24;
  CHECK(header_len == frame.size() - 16);
  CHECK(std::vector<uint8_t>(frame.begin() + 8, frame.begin() + 16) == std::vector<uint8_t>(8, 0));
  CHECK(frame[16 + 4] == 'B');  // FlatBuffers file identifier after the root offset
  CHECK(frame[16 + 7] == '1');
}
