// A worker's membership in a registry. Two ways to be a member:
//  - ControlJoin (`engine-worker --join HOST:PORT`): an authenticated control connection to the
//    coordinator; Register once, Heartbeat every interval, Goodbye on stop(). If the coordinator
//    goes away (restart), it reconnects with backoff and registers again.
//  - BackendJoin (`--registry etcd://...`): announce() with a TTL of 3 intervals, keep_alive()
//    every interval (announce() again when the entry is gone), withdraw() on stop().
// `status` is called for every Register/Heartbeat/announce to get fresh memory and load.
// Threads: one background thread each; stop() is idempotent and blocks until it is sent.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "engine/registry/registry_backend.h"
#include "net/auth.h"

namespace baton::registry {

using StatusFn = std::function<NodeRecord()>;

class Membership {
 public:
  virtual ~Membership() = default;
  // Deregisters (Goodbye / withdraw) with `reason`, then stops the thread. Idempotent.
  virtual void stop(const std::string& reason) = 0;
  // True while the node is registered (a live control connection / a live lease).
  virtual bool registered() const = 0;
};

struct ControlJoinOptions {
  std::string host;
  uint16_t port = 0;
  net::AuthConfig auth = net::AuthConfig::insecure();
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds max_backoff{2000};
};

// Parses "HOST:PORT" (the --join value); throws baton::Error naming the value.
std::pair<std::string, uint16_t> parse_host_port(const std::string& text, const std::string& what);

std::unique_ptr<Membership> start_control_join(const std::string& node_id, ControlJoinOptions options, StatusFn status);

std::unique_ptr<Membership> start_backend_join(std::unique_ptr<RegistryBackend> backend,
                                               std::chrono::milliseconds heartbeat_interval, StatusFn status);

}  // namespace baton::registry
