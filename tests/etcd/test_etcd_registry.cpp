// EtcdRegistry and EtcdClient against a real etcd on 127.0.0.1 (etcd_server.h). Every test
// case uses its own key prefix, so they also pass when the binary runs them in one process.
#include <httplib.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "engine/base/error.h"
#include "engine/registry/etcd_registry.h"
#include "engine/registry/join_client.h"
#include "engine/registry/node_record_json.h"
#include "etcd_server.h"

using namespace baton;
using namespace baton::registry;
using namespace std::chrono_literals;
using baton::test::shared_etcd;
using Clock = std::chrono::steady_clock;

namespace {

NodeRecord node(const std::string& id, uint16_t port, uint64_t free_bytes = 1ull << 30) {
  NodeRecord n;
  n.node_id = id;
  n.host = "127.0.0.1";
  n.port = port;
  n.memory_total = 8ull << 30;
  n.memory_free = free_bytes;
  n.threads = 2;
  n.isa = "avx2";
  n.layers = {{0, 7}};
  n.model_identity = "stories260K";
  n.speed = 10.5f;
  return n;
}

std::vector<std::string> ids(const std::vector<NodeRecord>& nodes) {
  std::vector<std::string> out;
  for (const auto& n : nodes) out.push_back(n.node_id);
  return out;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Fixture or skip: in CI the etcd-server package is installed, so this never skips there.
#define REQUIRE_ETCD(server)                \
  test::EtcdServer* server = shared_etcd(); \
  if (!server) {                            \
    WARN("etcd not installed: skipped");    \
    return;                                 \
  }

}  // namespace

TEST_CASE("etcd client: leases, keys and binary values") {
  REQUIRE_ETCD(etcd);
  EtcdClient client("127.0.0.1", etcd->client_port());
  std::string value;
  for (int b = 0; b < 256; ++b) value += static_cast<char>(b);
  int64_t rev = client.put("/client-test/bin", value);
  CHECK(rev > 0);
  EtcdRangeResult got = client.range_key("/client-test/bin");
  REQUIRE(got.kvs.size() == 1);
  CHECK(got.kvs[0].value == value);
  CHECK(got.kvs[0].mod_revision == rev);
  CHECK(got.kvs[0].lease == 0);

  int64_t lease = client.grant_lease(5s);
  client.put("/client-test/leased", "x", lease);
  CHECK(client.range_prefix("/client-test/").kvs.size() == 2);
  CHECK(client.range_prefix("/client-test/").kvs[1].lease == lease);
  int64_t ttl = client.keep_alive_lease(lease);
  CHECK((ttl >= 4 && ttl <= 5));
  CHECK(client.revoke_lease(lease));
  CHECK(client.range_key("/client-test/leased").kvs.empty());  // revoking deleted the key
  CHECK_FALSE(client.revoke_lease(lease));
  CHECK(client.keep_alive_lease(lease) == 0);
  CHECK_THROWS_WITH(client.put("/client-test/x", "y", lease), Catch::Contains(client.base_url() + "/v3/kv/put") &&
                                                                  Catch::Contains("put /client-test/x") &&
                                                                  Catch::Contains("requested lease not found"));
  CHECK(client.delete_key("/client-test/bin") == 1);
  CHECK(client.delete_key("/client-test/bin") == 0);
}

TEST_CASE("etcd registry: announce, list, keep alive, withdraw") {
  REQUIRE_ETCD(etcd);
  auto worker = EtcdRegistry::open(etcd->url("t-basic"));
  auto coordinator = EtcdRegistry::open(etcd->url("t-basic"));
  CHECK(worker->nodes_prefix() == "/t-basic/nodes/");
  CHECK(coordinator->list().empty());
  worker->withdraw();  // never announced: no-op
  CHECK_THROWS_WITH(worker->keep_alive(), Catch::Contains("before announce"));

  NodeRecord w1 = node("w1", 9101);
  worker->announce(w1, 10s);
  std::vector<NodeRecord> seen = coordinator->list();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == w1);
  EtcdClient raw("127.0.0.1", etcd->client_port());
  CHECK(node_record_from_text(raw.range_key("/t-basic/nodes/w1").kvs.at(0).value, "t") == w1);
  worker->keep_alive();

  // Re-announcing replaces the record (and the lease).
  NodeRecord w1b = node("w1", 9101, 123);
  worker->announce(w1b, 10s);
  worker->keep_alive();
  CHECK(coordinator->list() == std::vector<NodeRecord>{w1b});

  worker->withdraw();
  CHECK(coordinator->list().empty());
  CHECK_THROWS_WITH(worker->keep_alive(), Catch::Contains("before announce"));
  worker->withdraw();

  // The key deleted behind the worker's back: keep_alive says so.
  worker->announce(w1, 10s);
  raw.delete_key("/t-basic/nodes/w1");
  CHECK_THROWS_WITH(worker->keep_alive(),
                    Catch::Contains("/t-basic/nodes/w1 was deleted") && Catch::Contains("announce again"));
  worker->withdraw();

  CHECK_THROWS_WITH(worker->announce(node("a/b", 1), 5s), Catch::Contains("node id 'a/b'"));
  CHECK_THROWS_WITH(worker->announce(node("w1", 1), 0s), Catch::Contains(">= 1 s"));
}

TEST_CASE("etcd registry: update rewrites the record under the same lease") {
  REQUIRE_ETCD(etcd);
  auto worker = EtcdRegistry::open(etcd->url("t-update"));
  auto coordinator = EtcdRegistry::open(etcd->url("t-update"));
  CHECK_THROWS_WITH(worker->update(node("w1", 9101)), Catch::Contains("before announce"));
  worker->announce(node("w1", 9101), 10s);
  EtcdClient raw("127.0.0.1", etcd->client_port());
  const int64_t lease = raw.range_key("/t-update/nodes/w1").kvs.at(0).lease;
  NodeRecord fresher = node("w1", 9101, 77ull << 20);
  fresher.load = 0.5f;
  worker->update(fresher);
  CHECK(coordinator->list() == std::vector<NodeRecord>{fresher});
  CHECK(raw.range_key("/t-update/nodes/w1").kvs.at(0).lease == lease);  // still bound to the lease
  worker->keep_alive();
  CHECK_THROWS_WITH(worker->update(node("w2", 9102)), Catch::Contains("update() of node 'w2'"));
  raw.revoke_lease(lease);  // expired behind its back: the put fails
  CHECK_THROWS(worker->update(fresher));
  worker->withdraw();
}

TEST_CASE("etcd registry: a member's record follows its free memory and load (put when changed)") {
  REQUIRE_ETCD(etcd);
  auto coordinator = EtcdRegistry::open(etcd->url("t-refresh"));
  std::atomic<uint64_t> free_bytes{1ull << 30};
  std::atomic<int> calls{0};
  auto membership = start_backend_join(EtcdRegistry::open(etcd->url("t-refresh")), 100ms, [&] {
    ++calls;
    return node("w1", 9101, free_bytes.load());
  });
  auto free_seen = [&] {
    auto nodes = coordinator->list();
    return nodes.empty() ? uint64_t{0} : nodes[0].memory_free;
  };
  auto until = [&](auto pred) {
    const auto t0 = Clock::now();
    while (!pred() && seconds_since(t0) < 3) std::this_thread::sleep_for(20ms);
    return pred();
  };
  CHECK(until([&] { return free_seen() == (1ull << 30); }));
  const auto rev = EtcdClient("127.0.0.1", etcd->client_port()).range_key("/t-refresh/nodes/w1").kvs.at(0).mod_revision;
  free_bytes = (1ull << 30) + (1ull << 20);  // a small change: not worth a put
  const int before = calls;
  CHECK(until([&] { return calls >= before + 3; }));
  CHECK(EtcdClient("127.0.0.1", etcd->client_port()).range_key("/t-refresh/nodes/w1").kvs.at(0).mod_revision == rev);
  free_bytes = 3ull << 30;  // a real change
  CHECK(until([&] { return free_seen() == (3ull << 30); }));
  membership->stop("test over");
  CHECK(coordinator->list().empty());
}

TEST_CASE("etcd registry: an entry without keep-alive expires after its TTL") {
  REQUIRE_ETCD(etcd);
  auto worker = EtcdRegistry::open(etcd->url("t-ttl"));
  auto coordinator = EtcdRegistry::open(etcd->url("t-ttl"));
  auto start = Clock::now();
  worker->announce(node("w1", 9101), 2s);
  auto last_refresh = Clock::now();
  for (int i = 0; i < 3; ++i) {  // refresh every 0.8 s: > 1 s of margin on a loaded machine
    std::this_thread::sleep_for(800ms);
    if (i < 2) {
      worker->keep_alive();
      last_refresh = Clock::now();
    }
  }
  // 2.4 s after the announce: alive only thanks to the keep-alives.
  CHECK(seconds_since(start) > 2.3);
  CHECK(ids(coordinator->list()) == std::vector<std::string>{"w1"});
  // No more keep-alives: gone about 2 s after the last one (etcd checks expiry every 500 ms).
  while (!coordinator->list().empty() && seconds_since(last_refresh) < 6) std::this_thread::sleep_for(100ms);
  double gone_after = seconds_since(last_refresh);
  INFO("gone " << gone_after << " s after the last keep-alive");
  CHECK(coordinator->list().empty());
  CHECK(gone_after > 1.5);
  CHECK(gone_after < 3.5);
  CHECK_THROWS_WITH(worker->keep_alive(),
                    Catch::Contains("lease of /t-ttl/nodes/w1") && Catch::Contains("expired; announce again"));
  worker->announce(node("w1", 9101), 2s);  // recovers
  CHECK(coordinator->list().size() == 1);
  worker->withdraw();
}

TEST_CASE("etcd registry: wait_for_change wakes on put and delete, times out otherwise") {
  REQUIRE_ETCD(etcd);
  auto worker = EtcdRegistry::open(etcd->url("t-watch"));
  auto coordinator = EtcdRegistry::open(etcd->url("t-watch"));

  // Nothing happens: nullopt after the wait, not much later.
  auto t0 = Clock::now();
  CHECK_FALSE(coordinator->wait_for_change(300ms).has_value());
  CHECK(seconds_since(t0) >= 0.29);
  CHECK(seconds_since(t0) < 1.5);

  // A put while waiting wakes the watcher at once.
  auto put = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(200ms);
    worker->announce(node("w1", 9101), 10s);
  });
  t0 = Clock::now();
  auto changed = coordinator->wait_for_change(10s);
  put.get();
  REQUIRE(changed.has_value());
  CHECK(ids(*changed) == std::vector<std::string>{"w1"});
  CHECK(seconds_since(t0) < 3);

  // A change made between two waits is not missed.
  worker->announce(node("w1", 9101, 42), 10s);
  t0 = Clock::now();
  changed = coordinator->wait_for_change(10s);
  REQUIRE(changed.has_value());
  CHECK(changed->at(0).memory_free == 42);
  CHECK(seconds_since(t0) < 1);

  // Keys outside PREFIX/nodes/ do not wake it.
  EtcdClient raw("127.0.0.1", etcd->client_port());
  raw.put("/t-watch/other", "x");
  raw.put("/t-watch-2/nodes/w9", "x");
  CHECK_FALSE(coordinator->wait_for_change(300ms).has_value());

  // A delete wakes it too.
  auto del = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(200ms);
    worker->withdraw();
  });
  changed = coordinator->wait_for_change(10s);
  del.get();
  REQUIRE(changed.has_value());
  CHECK(changed->empty());
}

TEST_CASE("etcd registry: a compacted watch start revision counts as a change") {
  REQUIRE_ETCD(etcd);
  auto worker = EtcdRegistry::open(etcd->url("t-compact"));
  auto coordinator = EtcdRegistry::open(etcd->url("t-compact"));
  CHECK(coordinator->list().empty());  // remembers revision R
  worker->announce(node("w1", 9101), 10s);
  worker->announce(node("w1", 9101, 7), 10s);
  EtcdClient raw("127.0.0.1", etcd->client_port());
  int64_t now = raw.range_key("/t-compact/nodes/w1").revision;
  httplib::Client http("127.0.0.1", etcd->client_port());
  auto res = http.Post("/v3/kv/compaction", "{\"revision\": \"" + std::to_string(now) + "\"}", "application/json");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  auto t0 = Clock::now();
  auto changed = coordinator->wait_for_change(5s);  // watch from R + 1 < compacted revision
  REQUIRE(changed.has_value());
  CHECK(changed->at(0).memory_free == 7);
  CHECK(seconds_since(t0) < 1);
  worker->withdraw();
}

TEST_CASE("etcd registry: two workers and one coordinator") {
  REQUIRE_ETCD(etcd);
  auto w1 = EtcdRegistry::open(etcd->url("t-two"));
  auto w2 = EtcdRegistry::open(etcd->url("t-two"));
  auto coordinator = EtcdRegistry::open(etcd->url("t-two"));
  auto other_cluster = EtcdRegistry::open(etcd->url("t-two-b"));
  CHECK(coordinator->list().empty());
  w2->announce(node("w2", 9102), 10s);
  w1->announce(node("w1", 9101), 10s);
  other_cluster->announce(node("w3", 9103), 10s);
  std::vector<NodeRecord> seen = coordinator->list();
  CHECK(seen == std::vector<NodeRecord>{node("w1", 9101), node("w2", 9102)});  // ordered by id
  CHECK(ids(other_cluster->list()) == std::vector<std::string>{"w3"});

  // One worker leaves; the coordinator hears it and keeps the other.
  w1->withdraw();
  auto changed = coordinator->wait_for_change(5s);
  REQUIRE(changed.has_value());
  CHECK(ids(*changed) == std::vector<std::string>{"w2"});

  // A foreign, malformed or mislabelled entry is skipped, not fatal.
  EtcdClient raw("127.0.0.1", etcd->client_port());
  raw.put("/t-two/nodes/garbage", "{not json");
  raw.put("/t-two/nodes/w7", node_record_to_text(node("w8", 1)));
  CHECK(ids(coordinator->list()) == std::vector<std::string>{"w2"});
  w2->withdraw();
  other_cluster->withdraw();
}

TEST_CASE("etcd registry: etcd down is a clear error") {
  if (test::EtcdServer::find_binary().empty()) {
    WARN("etcd not installed: skipped");
    return;
  }
  test::EtcdServer etcd;  // our own, to stop it
  EtcdClient::Options quick{500ms};
  auto worker = EtcdRegistry::open(etcd.url("t-down"), quick);
  auto coordinator = EtcdRegistry::open(etcd.url("t-down"), quick);
  worker->announce(node("w1", 9101), 10s);
  CHECK(coordinator->list().size() == 1);
  etcd.stop();
  std::string where = "http://127.0.0.1:" + std::to_string(etcd.client_port());
  auto t0 = Clock::now();
  CHECK_THROWS_WITH(worker->keep_alive(),
                    Catch::Contains(where + "/v3/lease/keepalive") && Catch::Contains("cannot connect"));
  CHECK_THROWS_WITH(coordinator->list(),
                    Catch::Contains(where + "/v3/kv/range") && Catch::Contains("list /t-down/nodes/*"));
  CHECK_THROWS_WITH(coordinator->wait_for_change(2s), Catch::Contains(where + "/v3/watch"));
  CHECK_THROWS_WITH(worker->announce(node("w1", 9101), 10s),
                    Catch::Contains(where + "/v3/lease/grant") && Catch::Contains("cannot connect"));
  CHECK(seconds_since(t0) < 3);  // refused connections fail fast
}
