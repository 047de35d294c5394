// Real sockets on 127.0.0.1 (port 0): how connections end (idle timeout, close() and its linger,
// a throwing handler, stop(), a peer that stops reading) and calls refused on the I/O thread.
// Each test runs under a wall-clock bound.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstring>
#include <thread>

#include "engine/base/error.h"
#include "node_fixture.h"
#include "raw_peer.h"

using namespace baton::net;
using namespace baton::net::test;

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
