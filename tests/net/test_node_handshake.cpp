// Real sockets on 127.0.0.1 (port 0): the handshake (secret, auth mode, protocol version),
// delivery of every message type, hostile clients. Each test runs under a wall-clock bound.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstring>
#include <thread>

#include "engine/base/error.h"
#include "node_fixture.h"
#include "raw_peer.h"

using namespace baton::net;
using namespace baton::net::test;

TEST_CASE("an authenticated client gets every message type echoed back intact and in order") {
  WallClockBound bound(30s, "echo every message type");
  EchoServer server(node_options("server", AuthConfig::with_secret(kSecret)));
  InboxNode client(node_options("client", AuthConfig::with_secret(kSecret), Role::kCoordinator));
  ConnectionPtr c = client.node->connect("127.0.0.1", server.port);
  REQUIRE(c->is_open());
  CHECK(c->peer().hello.node_id == "server");
  CHECK(c->peer().hello.role == Role::kWorker);
  CHECK(c->peer().hello.protocol_version == kProtocolVersion);

  std::vector<Sample> sent;
  for (auto& s : all_samples()) {
    const Message& m = s.message;
    if (std::holds_alternative<Hello>(m) || std::holds_alternative<AuthChallenge>(m) ||
        std::holds_alternative<AuthResponse>(m))
      continue;  // handshake-only messages are a protocol error afterwards (tested below)
    if (std::holds_alternative<ClockPing>(m) || std::holds_alternative<ClockPong>(m))
      continue;  // answered inside net/, never delivered (test_clock_sync.cpp)
    REQUIRE(c->send(m, Payload::copy_of(s.body)));
    sent.push_back(s);
  }
  for (auto& s : sent) {
    auto in = client.inbox.pop(5000ms);
    REQUIRE(in.has_value());
    CHECK(in->message == s.message);
    CHECK(std::vector<uint8_t>(in->body.bytes().begin(), in->body.bytes().end()) == s.body);
    CHECK(in->connection.get() == c.get());
    if (!in->body.empty()) CHECK(reinterpret_cast<uintptr_t>(in->body.data()) % 64 == 0);
  }
  REQUIRE(eventually([&] { return server.accepted().size() == 1; }));
  CHECK(server.accepted()[0]->peer().hello.node_id == "client");
  CHECK(server.accepted()[0]->peer().hello.role == Role::kCoordinator);
}

TEST_CASE("a wrong secret is refused on both sides without retries and nothing is served") {
  WallClockBound bound(30s, "wrong secret");
  EchoServer server(node_options("server", AuthConfig::with_secret(kSecret)));
  InboxNode client(node_options("client", AuthConfig::with_secret("wrong secret")));
  auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(client.node->connect("127.0.0.1", server.port, {10000ms, 50ms, 1000ms}),
                    Catch::Contains("authentication failed") && Catch::Contains(std::to_string(server.port)));
  CHECK(std::chrono::steady_clock::now() - start < 3s);  // not retried until the deadline
  REQUIRE(eventually([&] { return server.rejections().size() == 1; }));
  CHECK(server.rejections()[0].kind == CloseKind::kAuth);
  CHECK_THAT(server.rejections()[0].reason, Catch::Contains("does not know the cluster secret"));
  CHECK(server.accepted().empty());
  CHECK(server.served == 0);

  // A raw peer with the wrong proof gets nothing back after its AuthResponse: just the close.
  RawSocket raw = RawSocket::connect_to(server.port);
  REQUIRE(raw.send_message(Hello{kProtocolVersion, 0, "raw", Role::kClient, AuthMode::kHmacSha256}));
  auto hello = raw.recv_message();
  REQUIRE((hello && std::holds_alternative<Hello>(*hello)));
  auto challenge = raw.recv_message();
  REQUIRE((challenge && std::holds_alternative<AuthChallenge>(*challenge)));
  REQUIRE(raw.send_message(AuthResponse{Mac{}, pattern_nonce(3)}));
  uint8_t byte;
  CHECK(::recv(raw.fd(), &byte, 1, 0) <= 0);  // EOF, no answer
  CHECK(eventually([&] { return server.node->connection_count() == 0; }));
}

TEST_CASE("secure and insecure peers refuse each other, two insecure peers connect") {
  WallClockBound bound(30s, "insecure mismatch");
  EchoServer secure(node_options("secure", AuthConfig::with_secret(kSecret)));
  EchoServer insecure(node_options("insecure", AuthConfig::insecure()));
  InboxNode insecure_client(node_options("ic", AuthConfig::insecure()));
  InboxNode secure_client(node_options("sc", AuthConfig::with_secret(kSecret)));

  CHECK_THROWS_WITH(insecure_client.node->connect("127.0.0.1", secure.port),
                    Catch::Contains("authentication mismatch") && Catch::Contains("insecure"));
  CHECK_THROWS_WITH(secure_client.node->connect("127.0.0.1", insecure.port),
                    Catch::Contains("authentication mismatch") && Catch::Contains("insecure"));
  REQUIRE(eventually([&] { return secure.rejections().size() == 1; }));
  CHECK(secure.rejections()[0].kind == CloseKind::kAuth);
  REQUIRE(eventually([&] { return insecure.rejections().size() == 1; }));
  CHECK(insecure.rejections()[0].kind == CloseKind::kAuth);

  ConnectionPtr c = insecure_client.node->connect("127.0.0.1", insecure.port);
  REQUIRE(c->send(Commit{9}));
  auto in = insecure_client.inbox.pop(5000ms);
  REQUIRE(in.has_value());
  CHECK(in->message == Message(Commit{9}));

  CHECK_THROWS_WITH(Node(node_options("x", std::nullopt), [](Incoming&&) {}),
                    Catch::Contains("insecure mode explicitly"));
}

TEST_CASE("a protocol version mismatch names both versions on both sides") {
  WallClockBound bound(30s, "version mismatch");
  // Server side: a raw client claiming version 99.
  EchoServer server(node_options("server", AuthConfig::with_secret(kSecret)));
  RawSocket raw = RawSocket::connect_to(server.port);
  REQUIRE(raw.send_message(Hello{99, 0, "future", Role::kClient, AuthMode::kHmacSha256}));
  auto hello = raw.recv_message();  // the server still says who it is
  REQUIRE((hello && std::holds_alternative<Hello>(*hello)));
  CHECK(std::get<Hello>(*hello).protocol_version == kProtocolVersion);
  CHECK(raw.closed_by_peer());
  REQUIRE(eventually([&] { return server.rejections().size() == 1; }));
  CHECK(server.rejections()[0].kind == CloseKind::kVersion);
  CHECK_THAT(server.rejections()[0].reason,
             Catch::Contains("version 99") && Catch::Contains(fmt::format("version {}", kProtocolVersion)));

  // Client side: a raw server answering with version 99.
  FutureVersionServer fake;
  InboxNode client(node_options("client", AuthConfig::with_secret(kSecret)));
  CHECK_THROWS_WITH(client.node->connect("127.0.0.1", fake.port()),
                    Catch::Contains("version 99") && Catch::Contains(fmt::format("version {}", kProtocolVersion)) &&
                        Catch::Contains("future-server"));
}

TEST_CASE("hostile clients are disconnected while a good client keeps being served") {
  WallClockBound bound(60s, "hostile clients");
  EchoServer server(node_options("server", AuthConfig::with_secret(kSecret)));
  InboxNode good(node_options("good", AuthConfig::with_secret(kSecret)));
  ConnectionPtr c = good.node->connect("127.0.0.1", server.port);
  uint64_t next_id = 0;
  auto ping = [&] {
    auto [f, body] = sample_forward(2, 8, next_id++);
    REQUIRE(c->send(f, body));
    auto in = good.inbox.pop(5000ms);
    REQUIRE(in.has_value());
    CHECK(std::get<Forward>(in->message).micro_batch_id == next_id - 1);
  };
  ping();

  SECTION("random bytes before the handshake") {
    RawSocket raw = RawSocket::connect_to(server.port);
    std::vector<uint8_t> junk(4096);
    for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<uint8_t>(i * 7919 + 13);
    raw.send_bytes(junk);
    CHECK(raw.closed_by_peer());
    REQUIRE(eventually([&] { return server.rejections().size() == 1; }));
    CHECK(server.rejections()[0].kind == CloseKind::kProtocol);
  }
  SECTION("a huge length prefix before the handshake") {
    RawSocket raw = RawSocket::connect_to(server.port);
    auto prefix = encode_prefix({0xFFFFFFF0u, 0, 0xFFFFFFF0u});
    raw.send_bytes(std::vector<uint8_t>(prefix.begin(), prefix.end()));
    CHECK(raw.closed_by_peer());
    REQUIRE(eventually([&] { return server.rejections().size() == 1; }));
    CHECK_THAT(server.rejections()[0].reason, Catch::Contains("exceeds the limit"));
  }
  SECTION("an authenticated peer announcing a body beyond the limit") {
    RawSocket raw = RawSocket::connect_to(server.port);
    REQUIRE(raw.handshake("raw", kSecret));
    REQUIRE(eventually([&] { return server.accepted().size() == 2; }));
    ConnectionPtr victim = server.accepted()[1];
    auto prefix = encode_prefix({64, 0, 0xFFFFFFF0u});
    raw.send_bytes(std::vector<uint8_t>(prefix.begin(), prefix.end()));
    CHECK(raw.closed_by_peer());
    REQUIRE(eventually([&] { return victim->close_info().has_value(); }));
    CHECK(victim->close_info()->kind == CloseKind::kProtocol);
    CHECK_THAT(victim->close_info()->reason, Catch::Contains("body_bytes 4294967280 exceeds"));
  }
  SECTION("an authenticated peer sending a corrupt header") {
    RawSocket raw = RawSocket::connect_to(server.port);
    REQUIRE(raw.handshake("raw", kSecret));
    auto frame = raw.encode(Commit{1});
    for (size_t i = kPrefixBytes + 8; i < frame.size(); ++i) frame[i] = 0xEE;
    raw.send_bytes(frame);
    CHECK(raw.closed_by_peer());
  }
  SECTION("an authenticated peer repeating the handshake") {
    RawSocket raw = RawSocket::connect_to(server.port);
    REQUIRE(raw.handshake("raw", kSecret));
    raw.send_message(Hello{});
    CHECK(raw.closed_by_peer());
  }
  SECTION("a peer that never says Hello") {
    RawSocket raw = RawSocket::connect_to(server.port);
    // handshake_timeout is 2 s in these tests
    auto start = std::chrono::steady_clock::now();
    CHECK(raw.closed_by_peer());
    CHECK(std::chrono::steady_clock::now() - start >= 1500ms);
    REQUIRE(eventually([&] { return server.rejections().size() == 1; }));
    CHECK(server.rejections()[0].kind == CloseKind::kTimeout);
  }
  ping();
  ping();
  CHECK(c->is_open());
}
