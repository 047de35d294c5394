// Real sockets on 127.0.0.1: Node::connect retries until a late port opens or its deadline, and
// reports why it failed as a type (net::ConnectError::kind()), so its callers word the failure
// without reading the message: one case per kind. Each test runs under a wall-clock bound.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <atomic>
#include <thread>

#include "node_fixture.h"
#include "raw_peer.h"

using namespace baton::net;
using namespace baton::net::test;

namespace {

// The ConnectError that connecting `client` to host:port throws (REQUIREd to throw one).
ConnectError connect_error_of(InboxNode& client, const std::string& host, uint16_t port,
                              ConnectOptions options = {600ms, 20ms, 100ms}) {
  try {
    client.node->connect(host, port, options);
  } catch (const ConnectError& e) {
    return e;
  }
  FAIL("connect to " << host << ":" << port << " did not throw a ConnectError");
  return ConnectError(ConnectFailure::kLocal, host, port, "no error");  // not reached: FAIL throws
}

uint16_t closed_port() {
  RawListener probe;  // a free port, released when it goes
  return probe.port();
}

}  // namespace

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

TEST_CASE("connect to a port nobody listens on reports kRefused with the address and the attempts") {
  WallClockBound bound(30s, "connect refused kind");
  InboxNode client(node_options("client", AuthConfig::with_secret(kSecret)));
  const uint16_t port = closed_port();
  ConnectError e = connect_error_of(client, "127.0.0.1", port);
  CHECK(e.kind() == ConnectFailure::kRefused);
  CHECK_THAT(e.reason(), Catch::Contains("attempts") && Catch::Contains("refused"));
  CHECK(std::string(e.what()) == fmt::format("net: cannot connect to 127.0.0.1:{}: {}", port, e.reason()));
  CHECK(to_string(e.kind()) == "refused");
}

TEST_CASE("connect to a listener that never answers the Hello reports kTimedOut") {
  WallClockBound bound(30s, "connect timed-out kind");
  RawListener silent;  // the kernel completes the TCP connect; nobody reads or writes
  auto options = node_options("client", AuthConfig::with_secret(kSecret));
  options.handshake_timeout = 200ms;
  InboxNode client(std::move(options));
  ConnectError e = connect_error_of(client, "127.0.0.1", silent.port());
  CHECK(e.kind() == ConnectFailure::kTimedOut);
  CHECK_THAT(e.reason(), Catch::Contains("not finished within"));
}

TEST_CASE("connect to a host name that does not resolve reports kHostNotFound") {
  WallClockBound bound(60s, "connect host-not-found kind");
  InboxNode client(node_options("client", AuthConfig::with_secret(kSecret)));
  ConnectError e = connect_error_of(client, "no-such-host.invalid", 25001);
  CHECK(e.kind() == ConnectFailure::kHostNotFound);
  CHECK_THAT(e.reason(), Catch::Contains("cannot resolve"));
}

TEST_CASE("connect to a peer that closes during the handshake reports kClosed") {
  WallClockBound bound(30s, "connect closed kind");
  RawListener listener;
  std::atomic<bool> done{false};
  std::thread closer([&] {  // accepts every attempt and hangs up at once
    while (!done) {
      RawSocket s = listener.accept_one();
      s.close();
    }
  });
  InboxNode client(node_options("client", AuthConfig::with_secret(kSecret)));
  ConnectError e = connect_error_of(client, "127.0.0.1", listener.port(), {300ms, 20ms, 50ms});
  CHECK(e.kind() == ConnectFailure::kClosed);
  done = true;
  RawSocket::connect_to(listener.port());  // wakes the closer's last accept
  closer.join();
}

TEST_CASE("connect with a wrong secret or the other auth mode reports kAuthRejected") {
  WallClockBound bound(30s, "connect auth kind");
  EchoServer server(node_options("server", AuthConfig::with_secret(kSecret)));
  InboxNode wrong(node_options("wrong", AuthConfig::with_secret("another secret")));
  ConnectError secret = connect_error_of(wrong, "127.0.0.1", server.port);
  CHECK(secret.kind() == ConnectFailure::kAuthRejected);
  CHECK_THAT(secret.reason(), Catch::Contains("authentication failed"));

  InboxNode insecure(node_options("insecure", AuthConfig::insecure()));
  ConnectError mode = connect_error_of(insecure, "127.0.0.1", server.port);
  CHECK(mode.kind() == ConnectFailure::kAuthRejected);
  CHECK_THAT(mode.reason(), Catch::Contains("authentication mismatch"));
}

TEST_CASE("connect to a peer of another protocol version reports kVersionMismatch") {
  WallClockBound bound(30s, "connect version kind");
  FutureVersionServer fake;
  InboxNode client(node_options("client", AuthConfig::with_secret(kSecret)));
  ConnectError e = connect_error_of(client, "127.0.0.1", fake.port());
  CHECK(e.kind() == ConnectFailure::kVersionMismatch);
  CHECK_THAT(e.reason(), Catch::Contains("version 99"));
}

TEST_CASE("connect to a peer that answers the Hello with another message reports kProtocol") {
  WallClockBound bound(30s, "connect protocol kind");
  RawListener listener;
  std::thread fake([&] {
    RawSocket s = listener.accept_one();
    s.recv_message();
    s.send_message(Commit{1});
    s.closed_by_peer();
  });
  InboxNode client(node_options("client", AuthConfig::with_secret(kSecret)));
  ConnectError e = connect_error_of(client, "127.0.0.1", listener.port());
  CHECK(e.kind() == ConnectFailure::kProtocol);
  CHECK_THAT(e.reason(), Catch::Contains("during the handshake"));
  fake.join();
}

TEST_CASE("connect on a stopped node reports kStopped") {
  WallClockBound bound(30s, "connect stopped kind");
  EchoServer server(node_options("server", AuthConfig::with_secret(kSecret)));
  InboxNode client(node_options("client", AuthConfig::with_secret(kSecret)));
  client.node->stop();
  ConnectError e = connect_error_of(client, "127.0.0.1", server.port);
  CHECK(e.kind() == ConnectFailure::kStopped);
  CHECK_THAT(e.what(), Catch::Contains("the node is stopped"));
}
