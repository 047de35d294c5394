// Shared setup for the socket tests: nodes on 127.0.0.1 port 0 and an echo server.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "net/inbox.h"
#include "net/node.h"
#include "net_samples.h"

namespace baton::net::test {

using namespace std::chrono_literals;

inline constexpr const char* kSecret = "correct horse battery staple";

inline NodeOptions node_options(std::string id, std::optional<AuthConfig> auth, Role role = Role::kWorker) {
  NodeOptions o;
  o.node_id = std::move(id);
  o.role = role;
  o.auth = std::move(auth);
  o.handshake_timeout = 2000ms;
  return o;
}

// A node whose received messages land in `inbox`.
struct InboxNode {
  Inbox inbox;
  std::unique_ptr<Node> node;
  explicit InboxNode(NodeOptions o, ConnectionHandler on_connection = {})
      : node(std::make_unique<Node>(std::move(o), inbox.handler(), std::move(on_connection))) {}
};

// A server that sends every message straight back with its body, and counts what it served.
struct EchoServer {
  std::atomic<size_t> served{0};
  std::mutex mutex;
  std::vector<CloseInfo> rejected;
  std::vector<ConnectionPtr> connections;
  std::unique_ptr<Node> node;
  uint16_t port = 0;

  explicit EchoServer(NodeOptions o) {
    o.on_rejected = [this](const PeerInfo&, const CloseInfo& info) {
      std::lock_guard lock(mutex);
      rejected.push_back(info);
    };
    node = std::make_unique<Node>(
        std::move(o),
        [this](Incoming&& in) {
          ++served;
          in.connection->send(in.message, in.body);
        },
        [this](const ConnectionPtr& c) {
          std::lock_guard lock(mutex);
          connections.push_back(c);
        });
    port = node->listen("127.0.0.1", 0);
  }
  std::vector<CloseInfo> rejections() {
    std::lock_guard lock(mutex);
    return rejected;
  }
  std::vector<ConnectionPtr> accepted() {
    std::lock_guard lock(mutex);
    return connections;
  }
};

// Polls `condition` until true or `limit` passes.
template <class F>
bool eventually(F condition, std::chrono::milliseconds limit = 5000ms) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return condition();
}

}  // namespace baton::net::test
