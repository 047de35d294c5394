// Frame prefix, codec round trips, semantic checks, and hostile bytes (mutation/truncation).
#include <catch2/catch.hpp>

#include <limits>
#include <random>

#include "engine/base/error.h"
#include "net/codec.h"
#include "net/frame.h"
#include "net_samples.h"

using namespace baton::net;
using baton::net::test::all_samples;

namespace {

Message round_trip(const Message& m, const std::vector<uint8_t>& body) {
  std::vector<uint8_t> frame = encode_frame(m, body);
  auto decoded = decode_frame(frame, FrameLimits{});
  INFO(message_name(m) << ": " << (decoded ? "" : decoded.error().message));
  REQUIRE(decoded.ok());
  CHECK(std::vector<uint8_t>(decoded->body.begin(), decoded->body.end()) == body);
  return decoded->message;
}

}  // namespace

TEST_CASE("frame prefix encodes magic, lengths and flags little-endian") {
  auto bytes = encode_prefix({0x01020304, 0, 0x0A0B0C0D});
  std::array<uint8_t, 16> expected{'B', 'T', 'N', '1', 4, 3, 2, 1, 0, 0, 0, 0, 0x0D, 0x0C, 0x0B, 0x0A};
  CHECK(bytes == expected);
  auto parsed = parse_prefix(bytes, FrameLimits{0x02000000, 0x0B000000});
  REQUIRE(parsed.ok());
  CHECK(*parsed == FramePrefix{0x01020304, 0, 0x0A0B0C0D});
}

TEST_CASE("frame prefix limits are checked before anything is allocated") {
  FrameLimits limits{1024, 4096};
  auto check_error = [&](FramePrefix p, const std::string& needle) {
    auto parsed = parse_prefix(encode_prefix(p), limits);
    REQUIRE_FALSE(parsed.ok());
    INFO(parsed.error().message);
    CHECK(parsed.error().message.find(needle) != std::string::npos);
  };
  check_error({1025, 0, 0}, "header_bytes 1025 exceeds the limit 1024");
  check_error({4, 0, 0}, "below the minimum 8");
  check_error({64, 0, 4097}, "body_bytes 4097 exceeds the limit 4096");
  check_error({64, 0, 0xFFFFFFFF}, "exceeds the limit");
  check_error({64, 2, 0}, "unknown flag bits 0x2");
  auto bytes = encode_prefix({64, 0, 0});
  bytes[0] = 'X';
  auto parsed = parse_prefix(bytes, limits);
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.error().message.find("magic") != std::string::npos);
  CHECK(parse_prefix(encode_prefix({1024, 0, 4096}), limits).ok());
}

TEST_CASE("every message type survives an encode/decode round trip unchanged") {
  auto samples = all_samples();
  REQUIRE(samples.size() == std::variant_size_v<Message>);
  for (size_t i = 0; i < samples.size(); ++i) {
    REQUIRE(samples[i].message.index() == i);
    CHECK(round_trip(samples[i].message, samples[i].body) == samples[i].message);
  }
}

TEST_CASE("default-valued and empty fields round trip too") {
  for (size_t i = 0; i < std::variant_size_v<Message>; ++i) {
    auto samples = all_samples();
    Message m = samples[i].message;
    // Reset the sample to its default-constructed alternative unless it carries a tensor
    // (a Forward/Hidden without a tensor is invalid by contract).
    if (std::holds_alternative<Forward>(m) || std::holds_alternative<Hidden>(m)) continue;
    std::visit([](auto& x) { x = std::decay_t<decltype(x)>{}; }, m);
    CHECK(round_trip(m, {}) == m);
  }
  Prepare p;
  p.next_hop = NextHop{};  // present but empty is distinct from absent
  CHECK(round_trip(p, {}) == Message(p));
  Forward empty;
  empty.hidden = TensorRef{DType::kF32, {0, 4096}, 0, 0};
  CHECK(round_trip(empty, {}) == Message(empty));
}

TEST_CASE("decoder rejects tensors that disagree with their shape, dtype or the body") {
  auto expect_error = [](const Message& m, uint64_t body_bytes, const std::string& needle) {
    auto problem = check_message(m, body_bytes);
    REQUIRE(problem.has_value());
    INFO(*problem);
    CHECK(problem->find(needle) != std::string::npos);
    // The encoder refuses the same message: we never send what a peer would reject.
    CHECK_THROWS_AS(encode_header(m, body_bytes), baton::Error);
  };
  Forward f;
  f.tokens = {{0, 0, true}, {0, 1, true}};
  f.hidden = TensorRef{DType::kF32, {2, 4}, 0, 32};
  CHECK_FALSE(check_message(f, 32).has_value());
  expect_error(f, 31, "outside the 31-byte body");

  Forward g = f;
  g.hidden.bytes = 30;
  expect_error(g, 64, "= 32 bytes but bytes = 30");
  g = f;
  g.hidden.offset = 2;
  expect_error(g, 64, "not a multiple");
  g = f;
  g.tokens.pop_back();
  expect_error(g, 32, "2 rows but 1 tokens");
  g = f;
  g.hidden.shape = {2, 2, 2};
  expect_error(g, 32, "rank 3, expected 2");
  g = f;
  g.hidden.dtype = static_cast<DType>(9);
  expect_error(g, 32, "unknown dtype 9");
  g = f;
  g.row_hints = {2};
  expect_error(g, 32, "1 hints for 2 tokens");
  g.row_hints = {2, kMaxRowHint};
  expect_error(g, 32, "Forward.row_hints[1]: 8 is not a row hint");
  g.row_hints = {6, 1};
  CHECK_FALSE(check_message(g, 32).has_value());
  g = f;
  g.hidden.shape = {1ull << 40, 1ull << 40};
  expect_error(g, 32, "overflows");
  g = f;
  g.hidden.offset = ~0ull - 3;
  expect_error(g, 32, "outside");

  expect_error(Commit{1}, 8, "carries no tensor but the frame has a 8-byte body");
  expect_error(Prepare{1, "", "", 5, 4, {}, DType::kF32, {}}, 0, "layer_first 5 > layer_last 4");
  expect_error(Failed{1, std::string(kMaxTextBytes + 1, 'x')}, 0, "Failed.reason");
  expect_error(Hello{1, 0, std::string(kMaxNameBytes + 1, 'n'), Role::kWorker, AuthMode::kHmacSha256}, 0,
               "Hello.node_id");
  NodeStatus s;
  s.load = std::numeric_limits<float>::quiet_NaN();
  expect_error(Heartbeat{s}, 0, "Heartbeat.status.load");
  s.load = 0;
  s.layers = {{4, 3}};
  expect_error(Register{s}, 0, "first > last");
}

TEST_CASE("protocol 4's typed fields are range-checked with messages naming the field") {
  auto refused = [](const Message& m, uint64_t body_bytes, const std::string& needle) {
    auto problem = check_message(m, body_bytes);
    REQUIRE(problem.has_value());
    INFO(*problem);
    CHECK(problem->find(needle) != std::string::npos);
    CHECK_THROWS_AS(encode_header(m, body_bytes), baton::Error);
  };
  // ErrorReport: a known code and, when about a pass, its micro-batch id (absent != 0).
  ErrorReport e{ErrorCode::kForwardFailed, "node w2: micro-batch 0 failed", 0};
  CHECK(round_trip(e, {}) == Message(e));
  e.micro_batch_id.reset();
  CHECK(round_trip(e, {}) == Message(e));
  e.micro_batch_id = ~0ull;
  CHECK(round_trip(e, {}) == Message(e));
  refused(ErrorReport{static_cast<ErrorCode>(6), "?"}, 0, "ErrorReport.code: 6 is not a known error code (0..5");

  // Prepare: n_ctx fits the engine's int32 positions, at least one sequence and a bounded count.
  Prepare p{1, "", "", 0, 3, {}, DType::kF32, {}};
  CHECK(std::get<Prepare>(round_trip(p, {})).max_sequences == 1);  // absent: one slot, as before
  p.n_ctx = kMaxContext;
  p.max_sequences = kMaxSequences;
  CHECK(round_trip(p, {}) == Message(p));
  p.n_ctx = kMaxContext + 1;
  refused(p, 0, "Prepare.n_ctx: 2147483648 is outside 0..2147483647");
  p.n_ctx = 4096;
  p.max_sequences = 0;
  refused(p, 0, "Prepare.max_sequences: 0 is outside 1..65536");
  p.max_sequences = kMaxSequences + 1;
  refused(p, 0, "Prepare.max_sequences: 65537 is outside 1..65536");

  // Forward/Hidden timings: times >= 0 and finite, a hop may be < 0 (not measured: error < 0).
  Forward f;
  f.tokens = {{0, 0, true}};
  f.hidden = TensorRef{DType::kF32, {1, 4}, 0, 16};
  f.sent_ns = 5;
  f.timings = {{0.5, 0.25, 16, -0.01, -1}};
  CHECK(round_trip(f, std::vector<uint8_t>(16)) == Message(f));
  Forward g = f;
  g.sent_ns = -1;
  refused(g, 16, "Forward.sent_ns: -1 is negative");
  g = f;
  g.timings[0].residence_ms = -0.5;
  refused(g, 16, "Forward.timings[0].residence_ms: -0.5 is not a finite value >= 0");
  g = f;
  g.timings[0].bytes_out = std::numeric_limits<double>::infinity();
  refused(g, 16, "Forward.timings[0].bytes_out");
  g = f;
  g.timings[0].hop_in_error_ms = std::numeric_limits<double>::quiet_NaN();
  refused(g, 16, "Forward.timings[0].hop_in_error_ms: nan is not finite");
  g = f;
  g.timings.assign(kMaxStageTimings + 1, StageTiming{});
  refused(g, 16, "Forward.timings: 4097 items, at most 4096 allowed");
  Hidden h{1, f.tokens, f.hidden, 7, {{1, 1, 16, 0, -1}, {1, 1, 16, 0.5, 0.01}}};
  CHECK(round_trip(h, std::vector<uint8_t>(16)) == Message(h));
  h.timings[1].compute_ms = -2;
  refused(h, 16, "Hidden.timings[1].compute_ms");
}

TEST_CASE("a frame whose length disagrees with its prefix is rejected") {
  auto frame = encode_frame(Commit{5});
  auto longer = frame;
  longer.push_back(0);
  CHECK_FALSE(decode_frame(longer, FrameLimits{}).ok());
  auto shorter = frame;
  shorter.pop_back();
  CHECK_FALSE(decode_frame(shorter, FrameLimits{}).ok());
}

TEST_CASE("an unknown message type from a newer peer is a decode error, not a crash") {
  auto frame = encode_frame(Commit{5});
  std::vector<uint8_t> header(frame.begin() + kPrefixBytes, frame.end());
  // Find the union type byte (Message_Commit = 7) by decoding with every candidate patched.
  bool found = false;
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] != 7) continue;
    auto patched = header;
    patched[i] = 200;
    auto decoded = decode_header(patched, 0);
    if (!decoded.ok() && decoded.error().message.find("unknown message type 200") != std::string::npos) found = true;
  }
  CHECK(found);
}

TEST_CASE("every single-byte mutation of every sample frame decodes or fails cleanly") {
  // The interesting property is that nothing crashes (run this under ASan/UBSan too).
  size_t rejected = 0, accepted = 0;
  const uint8_t replacements[] = {0x00, 0x01, 0x7F, 0x80, 0xFF};
  for (const auto& sample : all_samples()) {
    const auto frame = encode_frame(sample.message, sample.body);
    for (size_t i = 0; i < frame.size(); ++i) {
      for (uint8_t r : replacements) {
        if (frame[i] == r) continue;
        auto mutated = frame;
        mutated[i] = r;
        auto decoded = decode_frame(mutated, FrameLimits{});
        if (!decoded.ok()) {
          ++rejected;
          CHECK_FALSE(decoded.error().message.empty());
          continue;
        }
        ++accepted;
        // Whatever was accepted is a valid message: it re-encodes without complaint.
        CHECK_NOTHROW(encode_header(decoded->message, decoded->body.size()));
      }
    }
  }
  CHECK(rejected > 1000);
  CHECK(accepted > 0);  // mutations of plain values (ids, positions) are legitimately accepted
}

TEST_CASE("every truncation of every sample frame is rejected") {
  for (const auto& sample : all_samples()) {
    const auto frame = encode_frame(sample.message, sample.body);
    for (size_t n = 0; n < frame.size(); ++n) {
      std::vector<uint8_t> cut(frame.begin(), frame.begin() + static_cast<long>(n));
      CHECK_FALSE(decode_frame(cut, FrameLimits{}).ok());
      // A header cut short but announced with the right length must fail verification.
      if (n > kPrefixBytes) {
        std::vector<uint8_t> header(frame.begin() + kPrefixBytes, frame.begin() + static_cast<long>(n));
        auto full_header_len = frame.size() - kPrefixBytes - sample.body.size();
        if (header.size() < full_header_len) {
          auto decoded = decode_header(header, sample.body.size());
          if (decoded.ok()) CHECK_NOTHROW(encode_header(decoded.value(), sample.body.size()));
        }
      }
    }
  }
}

TEST_CASE("random garbage headers never crash the decoder") {
  std::mt19937_64 rng(12345);
  size_t accepted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<uint8_t> header(8 + rng() % 300);
    for (auto& b : header) b = static_cast<uint8_t>(rng());
    if (iter % 2 == 0) {  // give half of them a valid identifier so the verifier is exercised
      header[4] = 'B';
      header[5] = 'T';
      header[6] = 'N';
      header[7] = '1';
      header[0] = static_cast<uint8_t>(rng() % 64);
      header[1] = header[2] = header[3] = 0;
    }
    auto decoded = decode_header(header, rng() % 128);
    if (decoded.ok()) ++accepted;
  }
  SUCCEED("accepted " << accepted << " of 20000 random headers");
}
