// Real sockets on 127.0.0.1 (port 0): big bodies, ordering from several threads, a peer
// vanishing mid-frame. Each test runs under a wall-clock bound.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstring>
#include <thread>

#include "engine/base/error.h"
#include "node_fixture.h"
#include "raw_peer.h"

using namespace baton::net;
using namespace baton::net::test;

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
