// The etcd backend end to end: workers `--registry etcd://...` (lease-bound keys), the
// coordinator (`cluster.registry: etcd://...`) watching the prefix, planning and serving; a
// SIGTERM'd worker withdraws at once, a kill -9'd one drops out when its lease expires.
// Uses a real etcd (tests/etcd/etcd_server.h); skipped with a WARN only when none is installed.
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <chrono>
#include <thread>

#include "engine/cluster/cluster_config.h"
#include "engine/registry/dynamic_cluster.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/local_model.h"
#include "etcd/etcd_server.h"
#include "fixtures.h"
#include "pipeline/worker_process.h"
#include "registry/registry_helpers.h"

namespace {

using baton::registry::NodeState;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

template <class Pred>
double seconds_until(Pred pred, std::chrono::milliseconds limit) {
  const auto t0 = Clock::now();
  while (Clock::now() - t0 < limit) {
    if (pred()) return std::chrono::duration<double>(Clock::now() - t0).count();
    std::this_thread::sleep_for(20ms);
  }
  return -1;
}

}  // namespace

TEST_CASE("registry over etcd: workers announce, the coordinator plans and serves, withdraw and lease expiry",
          "[registry]") {
  if (baton::test::EtcdServer::find_binary().empty()) {
    WARN("etcd not installed: skipped");
    return;
  }
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  baton::test::EtcdServer etcd;
  const std::string url = etcd.url("baton-registry-test");
  auto worker = [&](const std::string& id) {
    return std::make_unique<baton::test::WorkerProcess>(
        id, model, std::vector<std::string>{"--insecure", "--registry", url, "--heartbeat-ms", "300", "--speed", "10"});
  };
  auto w1 = worker("e1");
  auto w2 = worker("e2");

  auto config = baton::parse_cluster_config(
      fmt::format("model: {}\ncluster:\n  insecure: true\n  registry: {}\n  nodes: auto\n  min_nodes: 2\n"
                  "  join_timeout: 10\n  connect_timeout: 5\n  load_timeout: 20\n",
                  model, url),
      "etcd.yaml", "/");
  baton::registry::DynamicClusterOptions o;
  o.cluster.threads = 1;
  o.cluster.n_ctx = 128;
  baton::registry::DynamicCluster dc(config, o);
  CHECK(dc.control_port() == 0);
  dc.start();
  const auto plan = dc.plan();
  REQUIRE(plan.size() == 2);
  CHECK(plan[0].record.node_id == "e1");
  CHECK(plan[1].record.port == w2->port());
  CHECK(dc.snapshot().ready);

  baton::LocalModelOptions lo;
  lo.threads = 1;
  lo.n_ctx = 128;
  baton::LocalModel local(model, lo);
  auto c = baton::test::loaded_pipeline(dc);
  CHECK(baton::test::generate_tokens(c.layers(), c.head(), c.tokenizer(), 8) ==
        baton::test::generate_tokens(local.layers(), local.head(), local.tokenizer(), 8));

  // SIGTERM: the worker withdraws its key; the watch sees it at once.
  CHECK(w2->terminate() == 0);
  auto state = [&](const char* id) {
    auto e = dc.registry().find(id);
    return e ? e->state : NodeState::kOffline;
  };
  const double withdrawn = seconds_until([&] { return state("e2") == NodeState::kOffline; }, 3000ms);
  CHECK(withdrawn >= 0);
  CHECK(withdrawn < 1.5);
  CHECK(!dc.snapshot().ready);

  // kill -9: nobody withdraws; the lease (TTL 1 s at 300 ms heartbeats) expires.
  w1->kill_now();
  const double expired = seconds_until([&] { return state("e1") == NodeState::kOffline; }, 8000ms);
  fmt::print("etcd registry: withdrawn seen after {:.2f} s, lease expiry seen after {:.2f} s\n", withdrawn, expired);
  CHECK(expired >= 0);
}

// Issue 29, defect 4: a worker killed and restarted on a new port before its lease expired used to
// be kept at its old address ("heartbeats resumed"), and every re-plan loaded the dead address.
TEST_CASE("registry over etcd: a worker restarted on a new port is planned at its new address", "[registry]") {
  if (baton::test::EtcdServer::find_binary().empty()) {
    WARN("etcd not installed: skipped");
    return;
  }
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  baton::test::EtcdServer etcd;
  const std::string url = etcd.url("baton-registry-moved");
  auto worker = [&](const std::string& id) {
    return std::make_unique<baton::test::WorkerProcess>(
        id, model, std::vector<std::string>{"--insecure", "--registry", url, "--heartbeat-ms", "300", "--speed", "10"});
  };
  auto w1 = worker("m1");
  auto w2 = worker("m2");
  auto config = baton::parse_cluster_config(
      fmt::format("model: {}\ncluster:\n  insecure: true\n  registry: {}\n  nodes: auto\n  min_nodes: 2\n"
                  "  join_timeout: 10\n  connect_timeout: 3\n  load_timeout: 10\n  heartbeat_timeout: 3\n",
                  model, url),
      "etcd.yaml", "/");
  baton::registry::DynamicClusterOptions o;
  o.cluster.threads = 1;
  o.cluster.n_ctx = 128;
  baton::registry::DynamicCluster dc(config, o);
  dc.start();
  REQUIRE(dc.plan().size() == 2);
  const uint16_t old_port = w2->port();
  baton::LocalModelOptions lo;
  lo.threads = 1;
  lo.n_ctx = 128;
  baton::LocalModel local(model, lo);
  const auto want = baton::test::generate_tokens(local.layers(), local.head(), local.tokenizer(), 8);

  // kill -9 and restart at once (its old lease still alive: TTL 1 s): a new process, a new port.
  w2->kill_now();
  w2 = worker("m2");
  REQUIRE(w2->port() != old_port);
  const double seen = seconds_until(
      [&] {
        auto e = dc.registry().find("m2");
        return e && e->record.port == w2->port();
      },
      5000ms);
  CHECK(seen >= 0);
  CHECK(dc.lost_planned_node());  // the loaded pipeline still points at the dead process
  CHECK(!dc.snapshot().ready);
  CHECK(dc.snapshot().detail.find(fmt::format("re-registered at 127.0.0.1:{}", w2->port())) != std::string::npos);

  // The re-plan loads m2 at its new address and the cluster answers as one process does.
  const auto t0 = Clock::now();
  CHECK(dc.replan());
  fmt::print("etcd registry: moved worker seen after {:.2f} s, re-planned in {:.2f} s\n", seen,
             std::chrono::duration<double>(Clock::now() - t0).count());
  REQUIRE(dc.plan().size() == 2);
  CHECK(dc.plan()[1].record.port == w2->port());
  CHECK(dc.snapshot().ready);
  auto c = baton::test::loaded_pipeline(dc);
  CHECK(baton::test::generate_tokens(c.layers(), c.head(), c.tokenizer(), 8) == want);
}
