// The coordinator's control port: workers started with `--join HOST:PORT` connect here,
// authenticate with the cluster secret (the same HMAC handshake as the data connections), send
// Register, then a Heartbeat every interval, and Goodbye when they shut down. Each message is
// applied to a NodeRegistry; a closed control connection marks its node offline at once, and a
// node that only goes silent is marked offline after the registry's heartbeat timeout.
// Peers that fail the handshake (wrong secret) are refused and logged (event=refused).
//
// Threads: the net::Node I/O thread queues messages; one thread applies them and sweeps.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "engine/registry/node_registry.h"
#include "net/auth.h"
#include "net/inbox.h"
#include "net/node.h"

namespace baton::registry {

class ControlListener {
 public:
  // Listens on host:port (0: any free port); throws baton::Error naming the address.
  ControlListener(NodeRegistry& registry, net::AuthConfig auth, const std::string& host, uint16_t port);
  ~ControlListener();  // stop()
  ControlListener(const ControlListener&) = delete;
  ControlListener& operator=(const ControlListener&) = delete;

  uint16_t port() const { return port_; }
  // Closes every control connection (workers then retry with backoff) and joins. Idempotent.
  void stop();

 private:
  void run();
  void handle(net::Incoming& in);

  NodeRegistry& registry_;
  net::Inbox inbox_;
  std::unique_ptr<net::Node> node_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace baton::registry
