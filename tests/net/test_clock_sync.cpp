// Clock probes: the on-wire offset calculation with synthetic timestamps, and real probes
// between two nodes of this process (one steady clock, so the true offset is exactly 0 and
// every estimate must be within its own error bound of 0).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <thread>

#include "net/clock_sync.h"
#include "node_fixture.h"

using namespace baton::net;
using namespace baton::net::test;

TEST_CASE("a probe with symmetric trips gives the exact offset, an asymmetric one stays within delay / 2") {
  ClockSync sync;
  CHECK_FALSE(sync.estimate(0).has_value());
  // The peer's clock is ours + 1'000'000'000 ns; 30 us each way, held 5 us.
  const int64_t off = 1'000'000'000;
  REQUIRE(sync.add(1000, 1000 + 30'000 + off, 1000 + 35'000 + off, 1000 + 65'000));
  auto e = sync.estimate(1000 + 65'000);
  REQUIRE(e);
  CHECK(e->offset_ns == off);
  CHECK(e->error_ns == 30'000 + 1);  // delay / 2 + rounding
  // 10 us out, 90 us back: the estimate is off by 40 us, inside the 50 us bound.
  ClockSync skew;
  REQUIRE(skew.add(0, 10'000 + off, 10'000 + off, 100'000));
  e = skew.estimate(100'000);
  REQUIRE(e);
  CHECK(std::llabs(e->offset_ns - off) == 40'000);
  CHECK(e->error_ns >= 50'000);
}

TEST_CASE("the estimate prefers the sample with the smallest bound, counting drift since each sample") {
  ClockSync sync;
  REQUIRE(sync.add(0, 100, 100, 200'000));                        // delay 200 us at t = 200 us
  REQUIRE(sync.add(1'000'000, 1'010'000, 1'010'000, 1'020'000));  // delay 20 us at t = 1.02 ms
  auto e = sync.estimate(1'020'000);
  REQUIRE(e);
  CHECK(e->error_ns == 10'001);
  // Ten seconds later both have aged by about the same: the tighter one still wins, its
  // bound grown by 200 ppm of the age.
  e = sync.estimate(10'001'020'000);
  REQUIRE(e);
  CHECK(e->error_ns >= 10'001 + 2'000'000);
  CHECK(e->error_ns <= 10'002 + 2'000'000);
  // Timestamps that run backwards are refused.
  CHECK_FALSE(sync.add(100, 0, 0, 50));
  CHECK_FALSE(sync.add(0, 100, 50, 200));
  CHECK_FALSE(sync.add(0, 0, 500, 100));  // held longer than the round trip
  CHECK(sync.samples() == 2);
}

TEST_CASE("nodes that probe estimate a zero offset between two connections of one process") {
  WallClockBound bound(20s, "clock probes");
  auto so = node_options("server", AuthConfig::insecure());
  so.clock_probe_interval = 50ms;
  InboxNode server(so, {});
  const uint16_t port = server.node->listen("127.0.0.1", 0);
  auto co = node_options("client", AuthConfig::insecure(), Role::kCoordinator);
  co.clock_probe_interval = 50ms;
  InboxNode client(co);
  ConnectionPtr c = client.node->connect("127.0.0.1", port);
  REQUIRE(eventually([&] { return c->clock().has_value(); }));
  // The server probes too once pinged; its side of the connection gets its own estimate.
  Message m = StatsRequest{};
  REQUIRE(c->send(m));
  auto in = server.inbox.pop(5000ms);
  REQUIRE(in);
  CHECK(std::holds_alternative<StatsRequest>(in->message));  // probes are never delivered
  REQUIRE(eventually([&] { return in->connection->clock().has_value(); }));
  std::this_thread::sleep_for(300ms);
  for (const ConnectionPtr& side : {c, in->connection}) {
    auto e = side->clock();
    REQUIRE(e);
    INFO("offset " << e->offset_ns << " ns, error bound " << e->error_ns << " ns");
    CHECK(std::llabs(e->offset_ns) <= e->error_ns);
    CHECK(e->error_ns < 50'000'000);  // loopback: far below 50 ms even on a loaded machine
  }
  CHECK(server.inbox.size() == 0);
  CHECK(client.inbox.size() == 0);
}

TEST_CASE("a node that does not probe answers probes but starts none") {
  WallClockBound bound(20s, "clock probes off");
  InboxNode server(node_options("server", AuthConfig::insecure()), {});
  const uint16_t port = server.node->listen("127.0.0.1", 0);
  auto co = node_options("client", AuthConfig::insecure(), Role::kCoordinator);
  co.clock_probe_interval = 50ms;
  InboxNode client(co);
  ConnectionPtr c = client.node->connect("127.0.0.1", port);
  REQUIRE(eventually([&] { return c->clock().has_value(); }));  // answered
  REQUIRE(c->send(StatsRequest{}));
  auto in = server.inbox.pop(5000ms);
  REQUIRE(in);
  std::this_thread::sleep_for(200ms);
  CHECK_FALSE(in->connection->clock().has_value());  // never probed
}
