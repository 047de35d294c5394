// Real sockets on 127.0.0.1 (port 0): handshake, message delivery, big bodies, ordering,
// shutdown. Each test runs under a wall-clock bound.
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
  RawListener listener;
  std::thread fake([&] {
    RawSocket s = listener.accept_one();
    s.recv_message();
    s.send_message(Hello{99, 0, "future-server", Role::kWorker, AuthMode::kHmacSha256});
    s.closed_by_peer();
  });
  InboxNode client(node_options("client", AuthConfig::with_secret(kSecret)));
  CHECK_THROWS_WITH(client.node->connect("127.0.0.1", listener.port()),
                    Catch::Contains("version 99") && Catch::Contains(fmt::format("version {}", kProtocolVersion)) &&
                        Catch::Contains("future-server"));
  fake.join();
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

TEST_CASE("a 64 MiB body crosses intact both ways") {
  WallClockBound bound(120s, "64 MiB body");
  NodeOptions so = node_options("server", AuthConfig::with_secret(kSecret));
  so.limits.max_body_bytes = 128u << 20;
  EchoServer server(so);
  NodeOptions co = node_options("client", AuthConfig::with_secret(kSecret));
  co.limits.max_body_bytes = 128u << 20;
  InboxNode client(co);
  ConnectionPtr c = client.node->connect("127.0.0.1", server.port);
  auto [f, body] = sample_forward(16, 1u << 20, 77);  // 16 x 1M f32 = 64 MiB
  REQUIRE(body.size() == 64u << 20);
  REQUIRE(c->send(f, body));
  auto in = client.inbox.pop(60000ms);
  REQUIRE(in.has_value());
  CHECK(in->message == Message(f));
  REQUIRE(in->body.size() == body.size());
  CHECK(std::memcmp(in->body.data(), body.data(), body.size()) == 0);
}

TEST_CASE("many messages from several threads arrive whole and in per-thread order") {
  WallClockBound bound(60s, "many messages");
  InboxNode server(node_options("server", AuthConfig::with_secret(kSecret)));
  uint16_t port = server.node->listen("127.0.0.1", 0);
  InboxNode client(node_options("client", AuthConfig::with_secret(kSecret)));
  ConnectionPtr c = client.node->connect("127.0.0.1", port);
  constexpr int kThreads = 4, kPerThread = 5000;
  std::vector<std::thread> senders;
  for (int t = 0; t < kThreads; ++t)
    senders.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto [f, body] = sample_forward(1 + i % 3, 16, uint64_t(t) << 32 | uint64_t(i));
        f.tokens[0].seq_id = static_cast<uint32_t>(t);
        c->send(f, body);
      }
    });
  for (auto& s : senders) s.join();
  std::vector<int> next(kThreads, 0);
  for (int n = 0; n < kThreads * kPerThread; ++n) {
    auto in = server.inbox.pop(10000ms);
    REQUIRE(in.has_value());
    const auto& f = std::get<Forward>(in->message);
    int t = static_cast<int>(f.micro_batch_id >> 32);
    int i = static_cast<int>(f.micro_batch_id & 0xFFFFFFFF);
    REQUIRE(t < kThreads);
    REQUIRE(i == next[t]);
    ++next[t];
    auto [expected, expected_body] = sample_forward(1 + i % 3, 16, f.micro_batch_id);
    REQUIRE(in->body.size() == expected_body.size());
    REQUIRE(std::memcmp(in->body.data(), expected_body.data(), expected_body.size()) == 0);
  }
  CHECK(server.inbox.size() == 0);
}

TEST_CASE("a peer vanishing mid-frame ends the connection with a reason") {
  WallClockBound bound(30s, "peer vanishes");
  std::mutex m;
  std::optional<CloseInfo> closed;
  InboxNode server(node_options("server", AuthConfig::with_secret(kSecret)), [&](const ConnectionPtr& c) {
    c->on_closed([&](const CloseInfo& info) {
      std::lock_guard lock(m);
      closed = info;
    });
  });
  uint16_t port = server.node->listen("127.0.0.1", 0);
  RawSocket raw = RawSocket::connect_to(port);
  REQUIRE(raw.handshake("raw", kSecret));
  auto [f, body] = sample_forward(2, 64, 1);
  auto frame = raw.encode(f, std::vector<uint8_t>(body.bytes().begin(), body.bytes().end()));
  REQUIRE(frame.size() > 100);
  frame.erase(frame.end() - 100, frame.end());  // the body is cut short
  raw.send_bytes(frame);
  raw.close();
  REQUIRE(eventually([&] {
    std::lock_guard lock(m);
    return closed.has_value();
  }));
  std::lock_guard lock(m);
  CHECK(closed->kind == CloseKind::kPeerClosed);
  CHECK_THAT(closed->reason, Catch::Contains("mid-frame") && Catch::Contains("frame body") && Catch::Contains("'raw'"));
  CHECK(server.inbox.size() == 0);
}

TEST_CASE("connect retries until a port that opens later accepts") {
  WallClockBound bound(30s, "connect retry");
  uint16_t port;
  {
    RawListener probe;  // find a free port, then release it
    port = probe.port();
  }
  InboxNode client(node_options("client", AuthConfig::with_secret(kSecret)));
  std::unique_ptr<Node> late;
  std::thread opener([&] {
    std::this_thread::sleep_for(600ms);
    late = std::make_unique<Node>(node_options("late", AuthConfig::with_secret(kSecret)),
                                  [](Incoming&& in) { in.connection->send(in.message, in.body); });
    late->listen("127.0.0.1", port);
  });
  auto start = std::chrono::steady_clock::now();
  ConnectionPtr c = client.node->connect("127.0.0.1", port, {10000ms, 20ms, 200ms});
  CHECK(std::chrono::steady_clock::now() - start >= 500ms);
  CHECK(c->peer().hello.node_id == "late");
  REQUIRE(c->send(Rollback{3}));
  auto in = client.inbox.pop(5000ms);
  REQUIRE(in.has_value());
  CHECK(in->message == Message(Rollback{3}));
  opener.join();
  late->stop();
}

TEST_CASE("connect gives up at its deadline naming the address and the attempts") {
  WallClockBound bound(30s, "connect deadline");
  uint16_t port;
  {
    RawListener probe;
    port = probe.port();
  }
  InboxNode client(node_options("client", AuthConfig::with_secret(kSecret)));
  auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(client.node->connect("127.0.0.1", port, {400ms, 20ms, 100ms}),
                    Catch::Contains("127.0.0.1:" + std::to_string(port)) && Catch::Contains("attempts") &&
                        Catch::Contains("refused"));
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(took >= 350ms);
  CHECK(took < 3s);
}

TEST_CASE("an idle connection is closed after the idle timeout, both sides learn why") {
  WallClockBound bound(30s, "idle timeout");
  NodeOptions so = node_options("server", AuthConfig::with_secret(kSecret));
  so.idle_timeout = 300ms;
  EchoServer server(so);
  InboxNode client(node_options("client", AuthConfig::with_secret(kSecret)));
  ConnectionPtr c = client.node->connect("127.0.0.1", server.port);
  std::mutex m;
  std::optional<CloseInfo> client_closed;
  c->on_closed([&](const CloseInfo& info) {
    std::lock_guard lock(m);
    client_closed = info;
  });
  // Traffic keeps it alive...
  for (int i = 0; i < 6; ++i) {
    std::this_thread::sleep_for(100ms);
    REQUIRE(c->send(Commit{uint64_t(i)}));
  }
  CHECK(c->is_open());
  // ... silence ends it.
  REQUIRE(eventually([&] { return !c->is_open(); }, 3000ms));
  REQUIRE(eventually([&] {
    std::lock_guard lock(m);
    return client_closed.has_value();
  }));
  CHECK(client_closed->kind == CloseKind::kPeerClosed);
  REQUIRE(server.accepted().size() == 1);
  REQUIRE(eventually([&] { return server.accepted()[0]->close_info().has_value(); }));
  CHECK(server.accepted()[0]->close_info()->kind == CloseKind::kTimeout);
  CHECK_THAT(server.accepted()[0]->close_info()->reason, Catch::Contains("300 ms"));
  CHECK_FALSE(c->send(Commit{99}));
}

TEST_CASE("close() delivers what was queued, then the peer sees the close") {
  WallClockBound bound(30s, "graceful close");
  std::mutex m;
  std::optional<CloseInfo> server_side;
  InboxNode server(node_options("server", AuthConfig::with_secret(kSecret)), [&](const ConnectionPtr& c) {
    c->on_closed([&](const CloseInfo& info) {
      std::lock_guard lock(m);
      server_side = info;
    });
  });
  uint16_t port = server.node->listen("127.0.0.1", 0);
  InboxNode client(node_options("client", AuthConfig::with_secret(kSecret)));
  ConnectionPtr c = client.node->connect("127.0.0.1", port);
  for (int i = 0; i < 200; ++i) {
    auto [f, body] = sample_forward(4, 1024, uint64_t(i));
    REQUIRE(c->send(f, body));
  }
  REQUIRE(c->send(Goodbye{"done"}));
  c->close("test finished");
  CHECK_FALSE(c->send(Commit{1}));
  for (int i = 0; i < 200; ++i) {
    auto in = server.inbox.pop(5000ms);
    REQUIRE(in.has_value());
    CHECK(std::get<Forward>(in->message).micro_batch_id == uint64_t(i));
  }
  auto bye = server.inbox.pop(5000ms);
  REQUIRE(bye.has_value());
  CHECK(bye->message == Message(Goodbye{"done"}));
  REQUIRE(eventually([&] { return c->close_info().has_value(); }));
  CHECK(c->close_info()->kind == CloseKind::kLocal);
  CHECK(c->close_info()->reason == "test finished");
  REQUIRE(eventually([&] {
    std::lock_guard lock(m);
    return server_side.has_value();
  }));
  CHECK(server_side->kind == CloseKind::kPeerClosed);
}

TEST_CASE("a throwing message handler closes only that connection") {
  WallClockBound bound(30s, "throwing handler");
  NodeOptions so = node_options("server", AuthConfig::with_secret(kSecret));
  std::vector<ConnectionPtr> accepted;
  std::mutex m;
  Node server(
      so,
      [](Incoming&& in) {
        if (std::holds_alternative<Failed>(in.message)) throw std::runtime_error("boom");
        in.connection->send(in.message, in.body);
      },
      [&](const ConnectionPtr& c) {
        std::lock_guard lock(m);
        accepted.push_back(c);
      });
  uint16_t port = server.listen("127.0.0.1", 0);
  InboxNode a(node_options("a", AuthConfig::with_secret(kSecret)));
  InboxNode b(node_options("b", AuthConfig::with_secret(kSecret)));
  ConnectionPtr ca = a.node->connect("127.0.0.1", port);
  ConnectionPtr cb = b.node->connect("127.0.0.1", port);
  REQUIRE(ca->send(Failed{1, "make it throw"}));
  REQUIRE(eventually([&] { return !ca->is_open(); }));
  REQUIRE(cb->send(Commit{2}));
  auto in = b.inbox.pop(5000ms);
  REQUIRE(in.has_value());
  CHECK(in->message == Message(Commit{2}));
  std::lock_guard lock(m);
  bool found = false;
  for (auto& c : accepted)
    if (c->close_info() && c->close_info()->reason.find("boom") != std::string::npos) found = true;
  CHECK(found);
}

TEST_CASE("stop() closes every connection with a reason and handles outlive the node") {
  WallClockBound bound(30s, "stop");
  EchoServer server(node_options("server", AuthConfig::with_secret(kSecret)));
  auto client = std::make_unique<InboxNode>(node_options("client", AuthConfig::with_secret(kSecret)));
  ConnectionPtr c1 = client->node->connect("127.0.0.1", server.port);
  ConnectionPtr c2 = client->node->connect("127.0.0.1", server.port);
  std::atomic<int> shutdown_callbacks{0};
  for (auto& c : {c1, c2})
    c->on_closed([&](const CloseInfo& info) {
      if (info.kind == CloseKind::kShutdown) ++shutdown_callbacks;
    });
  // Leave a frame queued/in flight while stopping.
  auto [f, body] = sample_forward(8, 4096, 5);
  c1->send(f, body);
  client->node->stop();
  CHECK(shutdown_callbacks == 2);
  CHECK_FALSE(c1->is_open());
  CHECK_FALSE(c1->send(Commit{1}));
  c1->close();     // harmless
  client.reset();  // the node is gone; the handles stay valid
  CHECK(c2->close_info()->kind == CloseKind::kShutdown);
  bool called = false;
  c2->on_closed([&](const CloseInfo&) { called = true; });  // already closed: runs now
  CHECK(called);
  REQUIRE(eventually([&] { return server.node->connection_count() == 0; }));
  c1.reset();
  c2.reset();
}

TEST_CASE("blocking calls from the I/O thread are refused, not deadlocked") {
  WallClockBound bound(30s, "io thread guard");
  std::mutex m;
  std::string error;
  Node* self = nullptr;
  Node node(node_options("server", AuthConfig::insecure()), [&](Incoming&&) {
    try {
      self->connect("127.0.0.1", 1);
    } catch (const baton::Error& e) {
      std::lock_guard lock(m);
      error = e.what();
    }
  });
  self = &node;
  uint16_t port = node.listen("127.0.0.1", 0);
  InboxNode client(node_options("client", AuthConfig::insecure()));
  client.node->connect("127.0.0.1", port)->send(Commit{1});
  REQUIRE(eventually([&] {
    std::lock_guard lock(m);
    return !error.empty();
  }));
  CHECK_THAT(error, Catch::Contains("I/O thread"));
}

// A server node with options `so` and a raw client 'sleepy' that passed the handshake and then
// never reads; conn is the server's side of that connection.
struct SleepyPeer {
  std::mutex m;
  std::vector<ConnectionPtr> accepted;
  InboxNode server;
  RawSocket raw;
  ConnectionPtr conn;

  explicit SleepyPeer(NodeOptions so)
      : server(std::move(so),
               [this](const ConnectionPtr& c) {
                 std::lock_guard lock(m);
                 accepted.push_back(c);
               }),
        raw(RawSocket::connect_to(server.node->listen("127.0.0.1", 0))) {
    REQUIRE(raw.handshake("sleepy", kSecret));
    REQUIRE(eventually([&] {
      std::lock_guard lock(m);
      return accepted.size() == 1;
    }));
    conn = accepted[0];
  }
};

TEST_CASE("a peer that stops reading fills the outbox up to its limit, then is closed") {
  WallClockBound bound(60s, "outbox limit");
  NodeOptions so = node_options("server", AuthConfig::with_secret(kSecret));
  so.max_outbox_bytes = 4u << 20;
  SleepyPeer peer(so);
  ConnectionPtr c = peer.conn;
  auto [f, body] = sample_forward(1, 64 * 1024, 1);  // 256 KiB frames
  int sent = 0;
  while (sent < 4000 && c->send(f, body)) ++sent;  // the kernel buffers absorb some first
  CHECK(sent < 4000);
  REQUIRE(eventually([&] { return c->close_info().has_value(); }));
  CHECK(c->close_info()->kind == CloseKind::kLocal);
  CHECK_THAT(c->close_info()->reason, Catch::Contains("outbox") && Catch::Contains("'sleepy'"));
}

TEST_CASE("close() gives up on a peer that does not read after the linger time") {
  WallClockBound bound(60s, "close linger");
  NodeOptions so = node_options("server", AuthConfig::with_secret(kSecret));
  so.close_linger = 300ms;
  SleepyPeer peer(so);
  ConnectionPtr c = peer.conn;
  auto [f, body] = sample_forward(1, 64 * 1024, 1);
  for (int i = 0; i < 200; ++i) c->send(f, body);  // 50 MiB: more than the kernel buffers
  auto start = std::chrono::steady_clock::now();
  c->close("linger test");
  REQUIRE(eventually([&] { return c->close_info().has_value(); }));
  CHECK(std::chrono::steady_clock::now() - start >= 250ms);
  CHECK_THAT(c->close_info()->reason, Catch::Contains("linger test") && Catch::Contains("still unsent"));
}
