// The sealed wire (net/wire_crypto.h): key derivation and the frame cipher on their own, then
// real Nodes on loopback with a man-in-the-middle relay between them that alters, replays,
// reorders, drops or cuts one frame: the receiver must close the connection with an
// authentication error and deliver nothing from the bad frame on. A tap checks activations
// never cross the wire in the clear unless the cluster runs --insecure.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <mutex>

#include "mitm_relay.h"
#include "node_fixture.h"
#include "raw_peer.h"

using namespace baton::net;
using namespace baton::net::test;

namespace {

Nonce filled(uint8_t v) {
  Nonce n;
  n.fill(v);
  return n;
}

struct Sealed {
  std::array<uint8_t, kPrefixBytes> prefix;
  std::vector<uint8_t> bytes;  // ciphertext of header | body, then the tag
};

Sealed seal(FrameCipher& c, std::vector<uint8_t> header, std::vector<uint8_t> body) {
  Sealed s{encode_prefix({static_cast<uint32_t>(header.size()), kFlagSealed, static_cast<uint32_t>(body.size())}),
           std::vector<uint8_t>(header.size() + body.size() + kWireTagBytes)};
  c.seal(s.prefix, header, body, s.bytes);
  return s;
}

bool open(FrameCipher& c, Sealed s, size_t header_bytes) {
  std::span<uint8_t> all(s.bytes);
  std::array<uint8_t, kWireTagBytes> tag;
  std::copy(s.bytes.end() - kWireTagBytes, s.bytes.end(), tag.begin());
  size_t body_bytes = s.bytes.size() - kWireTagBytes - header_bytes;
  return c.open(s.prefix, all.subspan(0, header_bytes), all.subspan(header_bytes, body_bytes), tag);
}

}  // namespace

TEST_CASE("session keys differ per direction, per nonce pair, per secret and per Hello field") {
  const Hello c{kProtocolVersion, 0, "c", Role::kCoordinator, AuthMode::kHmacSha256};
  const Hello w{kProtocolVersion, 0, "w", Role::kWorker, AuthMode::kHmacSha256};
  auto k = derive_session_keys("s", filled(1), filled(2), c, w);
  CHECK(k.client_to_server != k.server_to_client);
  CHECK(derive_session_keys("s", filled(1), filled(2), c, w).client_to_server == k.client_to_server);
  CHECK(derive_session_keys("t", filled(1), filled(2), c, w).client_to_server != k.client_to_server);
  CHECK(derive_session_keys("s", filled(3), filled(2), c, w).client_to_server != k.client_to_server);
  CHECK(derive_session_keys("s", filled(1), filled(3), c, w).client_to_server != k.client_to_server);
  // Swapping the nonces must not give the same keys (the salt keeps their order).
  CHECK(derive_session_keys("s", filled(2), filled(1), c, w).client_to_server != k.client_to_server);
  Hello changed = c;
  changed.node_id = "c2";
  CHECK(derive_session_keys("s", filled(1), filled(2), changed, w).client_to_server != k.client_to_server);
  changed = c;
  changed.features = 1;
  CHECK(derive_session_keys("s", filled(1), filled(2), changed, w).client_to_server != k.client_to_server);
  changed = w;
  changed.role = Role::kClient;
  CHECK(derive_session_keys("s", filled(1), filled(2), c, changed).server_to_client != k.server_to_client);
}

TEST_CASE("a frame cipher opens exactly the next authentic frame") {
  WireKey key{};
  key[0] = 7;
  std::vector<uint8_t> header(40, 0x11), body(1000, 0x22);
  FrameCipher tx(key), rx(key);
  Sealed a = seal(tx, header, body), b = seal(tx, header, body);
  CHECK(a.bytes != b.bytes);  // same plaintext, different counter
  CHECK(std::search(a.bytes.begin(), a.bytes.end(), body.begin(), body.begin() + 32) == a.bytes.end());

  SECTION("in order") {
    CHECK(open(rx, a, header.size()));
    CHECK(open(rx, b, header.size()));
    CHECK(rx.counter() == 2);
  }
  SECTION("out of order, replayed or skipped") {
    CHECK_FALSE(open(rx, b, header.size()));  // skipped a
    CHECK(rx.counter() == 0);
    CHECK(open(rx, a, header.size()));
    CHECK_FALSE(open(rx, a, header.size()));  // replayed
  }
  SECTION("any flipped bit: ciphertext, tag or the prefix (associated data)") {
    for (size_t i : {size_t{0}, size_t{39}, size_t{40}, size_t{1039}, size_t{1040}, size_t{1055}}) {
      Sealed bad = a;
      bad.bytes[i] ^= 0x01;
      CHECK_FALSE(open(rx, bad, header.size()));
    }
    for (size_t i = 0; i < kPrefixBytes; ++i) {
      Sealed bad = a;
      bad.prefix[i] ^= 0x80;
      CHECK_FALSE(open(rx, bad, header.size()));
    }
    CHECK(open(rx, a, header.size()));
  }
  SECTION("the other direction's key") {
    WireKey other = key;
    other[1] = 1;
    FrameCipher wrong(other);
    CHECK_FALSE(open(wrong, a, header.size()));
  }
}

namespace {

// Client -> relay -> server; the client sends three Forwards (micro-batch ids 0, 1, 2).
struct RelayedPair {
  std::mutex m;
  std::vector<ConnectionPtr> accepted;
  InboxNode server;
  uint16_t server_port;
  MitmRelay relay;
  InboxNode client;
  ConnectionPtr conn;

  RelayedPair(std::optional<AuthConfig> auth, FrameRewriter rewrite)
      : server(node_options("server", auth),
               [this](const ConnectionPtr& c) {
                 std::lock_guard lock(m);
                 accepted.push_back(c);
               }),
        server_port(server.node->listen("127.0.0.1", 0)),
        // Handshake client -> server: Hello, and AuthResponse when secure.
        relay(server_port, auth->mode() == AuthMode::kInsecure ? 1 : 2, std::move(rewrite)),
        client(node_options("client", auth, Role::kCoordinator)) {
    conn = client.node->connect("127.0.0.1", relay.port());
  }
  // Frame 0 always goes out; once the server has refused a tampered frame the connection may
  // already be closed on the client side too, so later sends may fail (a race, not a defect).
  void send_three(bool later_may_fail = false) {
    for (uint64_t id = 0; id < 3; ++id) {
      auto [f, body] = sample_forward(2, 256, id);
      bool sent = conn->send(f, body);
      if (id == 0 || !later_may_fail) REQUIRE(sent);
      if (!sent) return;
    }
  }
  ConnectionPtr server_side() {
    REQUIRE(eventually([&] {
      std::lock_guard lock(m);
      return accepted.size() == 1;
    }));
    std::lock_guard lock(m);
    return accepted[0];
  }
  // Micro-batch ids the server received, in order, each with its body checked.
  std::vector<uint64_t> delivered() {
    std::vector<uint64_t> ids;
    while (auto in = server.inbox.pop(std::chrono::milliseconds(300))) {
      const auto& f = std::get<Forward>(in->message);
      auto [expected, body] = sample_forward(2, 256, f.micro_batch_id);
      CHECK(std::equal(in->body.bytes().begin(), in->body.bytes().end(), body.bytes().begin(), body.bytes().end()));
      ids.push_back(f.micro_batch_id);
    }
    return ids;
  }
};

std::vector<WireFrame> pass(size_t, const std::vector<WireFrame>& seen) { return {seen.back()}; }

}  // namespace

TEST_CASE("a man in the middle who alters, replays, reorders, drops or cuts a frame is refused") {
  WallClockBound bound(60s, "man in the middle");
  struct Attack {
    const char* name;
    FrameRewriter rewrite;
    std::vector<uint64_t> delivered;  // before the connection closes
    CloseKind kind;
    const char* reason;
  };
  const char* kTagFailure = "failed authentication";
  std::vector<Attack> attacks = {
      {"flip one body byte of frame 1",
       [](size_t i, const std::vector<WireFrame>& seen) {
         WireFrame f = seen.back();
         if (i == 1) f[f.size() / 2] ^= 0x04;
         return std::vector<WireFrame>{f};
       },
       {0},
       CloseKind::kAuth,
       kTagFailure},
      {"flip a length bit in the prefix of frame 1 (header_bytes - 8: still a valid frame shape)",
       [](size_t i, const std::vector<WireFrame>& seen) {
         WireFrame f = seen.back();
         if (i == 1) {
           f[4] -= 8;   // header 8 bytes shorter ...
           f[12] += 8;  // ... body 8 bytes longer: same total, frame boundaries intact
         }
         return std::vector<WireFrame>{f};
       },
       {0},
       CloseKind::kAuth,
       kTagFailure},
      {"replay frame 0",
       [](size_t i, const std::vector<WireFrame>& seen) {
         if (i == 1) return std::vector<WireFrame>{seen[0], seen[1]};
         return std::vector<WireFrame>{seen.back()};
       },
       {0},
       CloseKind::kAuth,
       kTagFailure},
      {"swap frames 1 and 2",
       [](size_t i, const std::vector<WireFrame>& seen) {
         if (i == 1) return std::vector<WireFrame>{};
         if (i == 2) return std::vector<WireFrame>{seen[2], seen[1]};
         return std::vector<WireFrame>{seen.back()};
       },
       {0},
       CloseKind::kAuth,
       kTagFailure},
      {"drop frame 1",
       [](size_t i, const std::vector<WireFrame>& seen) {
         if (i == 1) return std::vector<WireFrame>{};
         return std::vector<WireFrame>{seen.back()};
       },
       {0},
       CloseKind::kAuth,
       kTagFailure},
      {"cut frame 1 short, then close",
       [](size_t i, const std::vector<WireFrame>& seen) {
         if (i == 1) return std::vector<WireFrame>{WireFrame(seen[1].begin(), seen[1].end() - 20), {}};
         return std::vector<WireFrame>{seen.back()};
       },
       {0},
       CloseKind::kPeerClosed,
       "mid-frame"},
  };
  for (auto& attack : attacks) {
    INFO(attack.name);
    RelayedPair pair(AuthConfig::with_secret(kSecret), attack.rewrite);
    ConnectionPtr victim = pair.server_side();
    pair.send_three(/*later_may_fail=*/true);
    REQUIRE(eventually([&] { return victim->close_info().has_value(); }));
    CHECK(victim->close_info()->kind == attack.kind);
    CHECK_THAT(victim->close_info()->reason, Catch::Contains(attack.reason));
    CHECK(pair.delivered() == attack.delivered);
  }
}

TEST_CASE("an honest relay changes nothing, and in insecure mode it could (the test can fail)") {
  WallClockBound bound(30s, "honest relay");
  RelayedPair pair(AuthConfig::with_secret(kSecret), pass);
  ConnectionPtr server_side = pair.server_side();
  pair.send_three();
  REQUIRE(eventually([&] { return pair.server.inbox.size() == 3; }));
  CHECK(pair.delivered() == std::vector<uint64_t>{0, 1, 2});
  CHECK(server_side->is_open());

  // Without the AEAD the altered frame goes through unnoticed: the attack above is real.
  RelayedPair plain(AuthConfig::insecure(), [](size_t i, const std::vector<WireFrame>& seen) {
    WireFrame f = seen.back();
    if (i == 1 && !f.empty()) f.back() ^= 0x04;  // the last body byte
    return std::vector<WireFrame>{f};
  });
  ConnectionPtr plain_side = plain.server_side();
  for (uint64_t id = 0; id < 2; ++id) {
    auto [f, body] = sample_forward(2, 256, id);
    REQUIRE(plain.conn->send(f, body));
  }
  auto first = plain.server.inbox.pop(5000ms);
  auto second = plain.server.inbox.pop(5000ms);
  REQUIRE((first && second));
  auto [f1, body1] = sample_forward(2, 256, 1);
  CHECK(second->body.bytes().back() == (body1.bytes().back() ^ 0x04));
  CHECK(plain_side->is_open());
}

TEST_CASE("a tap on the wire never sees an activation pattern in the clear") {
  WallClockBound bound(30s, "wire tap");
  // A recognisable activation row: 1 token x 2048 floats.
  std::vector<float> row(2048);
  for (size_t i = 0; i < row.size(); ++i) row[i] = 0.25f + 0.001f * static_cast<float>(i);
  Forward f;
  f.micro_batch_id = 42;
  f.tokens = {{0, 7, true}};
  f.hidden = TensorRef{DType::kF32, {1, 2048}, 0, 2048 * 4};
  Payload body = Payload::copy_of({reinterpret_cast<const uint8_t*>(row.data()), row.size() * 4});
  auto pattern = [&](size_t from) {
    return std::vector<uint8_t>(body.bytes().begin() + from, body.bytes().begin() + from + 16);
  };

  for (bool secure : {true, false}) {
    INFO((secure ? "secure" : "insecure"));
    RelayedPair pair(secure ? AuthConfig::with_secret(kSecret) : AuthConfig::insecure(), pass);
    pair.server_side();
    REQUIRE(pair.conn->send(f, body));
    auto in = pair.server.inbox.pop(5000ms);
    REQUIRE(in);
    REQUIRE(std::equal(in->body.bytes().begin(), in->body.bytes().end(), body.bytes().begin(), body.bytes().end()));
    auto wire = pair.relay.tapped();
    size_t found = 0;
    for (size_t from = 0; from + 16 <= body.size(); from += 512) {
      auto p = pattern(from);
      if (std::search(wire.begin(), wire.end(), p.begin(), p.end()) != wire.end()) ++found;
    }
    if (secure) CHECK(found == 0);
    else CHECK(found == body.size() / 512);  // the tap works: in the clear every slice is there
  }
}

TEST_CASE("a version-2 peer (no sealed frames) gets a clear version error") {
  WallClockBound bound(30s, "old peer");
  EchoServer server(node_options("server", AuthConfig::with_secret(kSecret)));
  RawSocket raw = RawSocket::connect_to(server.port);
  CHECK_FALSE(raw.handshake("old", kSecret, 2));
  REQUIRE(eventually([&] { return server.rejections().size() == 1; }));
  CHECK(server.rejections()[0].kind == CloseKind::kVersion);
  CHECK_THAT(server.rejections()[0].reason,
             Catch::Contains("version 2") && Catch::Contains(fmt::format("version {}", kProtocolVersion)));
}

TEST_CASE("a version-3 peer (text-typed errors, timing trailer) gets a clear version error") {
  WallClockBound bound(30s, "protocol 3 peer");
  EchoServer server(node_options("server", AuthConfig::with_secret(kSecret)));
  RawSocket raw = RawSocket::connect_to(server.port);
  CHECK_FALSE(raw.handshake("old", kSecret, 3));
  REQUIRE(eventually([&] { return server.rejections().size() == 1; }));
  CHECK(server.rejections()[0].kind == CloseKind::kVersion);
  CHECK_THAT(server.rejections()[0].reason, Catch::Contains("version 3") && Catch::Contains("version 4"));
}

TEST_CASE("a plaintext frame after a secure handshake is refused") {
  WallClockBound bound(30s, "plaintext after handshake");
  EchoServer server(node_options("server", AuthConfig::with_secret(kSecret)));
  RawSocket raw = RawSocket::connect_to(server.port);
  REQUIRE(raw.handshake("raw", kSecret));
  REQUIRE(eventually([&] { return server.accepted().size() == 1; }));
  raw.send_bytes(encode_frame(Commit{1}));
  CHECK(raw.closed_by_peer());
  ConnectionPtr victim = server.accepted()[0];
  REQUIRE(eventually([&] { return victim->close_info().has_value(); }));
  CHECK(victim->close_info()->kind == CloseKind::kProtocol);
  CHECK_THAT(victim->close_info()->reason, Catch::Contains("unsealed (plaintext)"));
  CHECK(server.served == 0);
}

TEST_CASE("the plaintext frame decoder refuses a sealed frame instead of misreading it") {
  auto frame = encode_frame(Commit{1});
  frame[8] = static_cast<uint8_t>(kFlagSealed);
  auto decoded = decode_frame(frame, FrameLimits{});
  REQUIRE_FALSE(decoded.ok());
  CHECK_THAT(decoded.error().message, Catch::Contains("sealed"));
}
