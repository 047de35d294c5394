#include "engine/registry/control_listener.h"

#include <spdlog/spdlog.h>

namespace baton::registry {

using namespace std::chrono_literals;

ControlListener::ControlListener(NodeRegistry& registry, net::AuthConfig auth, const std::string& host,
                                 uint16_t port)
    : registry_(registry) {
  net::NodeOptions no;
  no.node_id = "coordinator";
  no.role = net::Role::kCoordinator;
  no.auth = std::move(auth);
  no.on_rejected = [](const net::PeerInfo& peer, const net::CloseInfo& info) {
    spdlog::warn("registry event=refused node={} address={} reason=\"{}\"",
                 peer.hello.node_id.empty() ? "?" : peer.hello.node_id, peer.address, info.reason);
  };
  NodeRegistry* reg = &registry_;
  auto on_connection = [reg](const net::ConnectionPtr& c) {
    const std::string id = c->peer().hello.node_id;
    c->on_closed([reg, id, cid = c->id()](const net::CloseInfo& info) {
      reg->connection_lost(id, cid, fmt::format("{}: {}", to_string(info.kind), info.reason));
    });
  };
  node_ = std::make_unique<net::Node>(std::move(no), inbox_.handler(), on_connection);
  port_ = node_->listen(host, port);
  spdlog::info("registry: control port listening on {}:{}", host, port_);
  thread_ = std::thread([this] { run(); });
}

ControlListener::~ControlListener() { stop(); }

void ControlListener::stop() {
  if (stopping_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();
  node_->stop();
}

void ControlListener::run() {
  while (!stopping_) {
    if (auto in = inbox_.pop(100ms)) {
      try {
        handle(*in);
      } catch (const std::exception& e) {
        spdlog::error("registry: {} from {} failed: {}", net::message_name(in->message),
                      in->connection->peer().address, e.what());
        in->connection->close(e.what());
      }
    }
    registry_.sweep();
  }
}

void ControlListener::handle(net::Incoming& in) {
  const auto& c = in.connection;
  const std::string& hello_id = c->peer().hello.node_id;
  auto check_id = [&](const net::NodeStatus& s) {
    if (s.node_id != hello_id) {
      spdlog::warn("registry event=refused node={} address={} reason=\"it authenticated as '{}'\"", s.node_id,
                   c->peer().address, hello_id);
      c->send(net::ErrorReport{1, fmt::format("registered as '{}' on a connection authenticated as '{}'",
                                              s.node_id, hello_id)});
      c->close("node id mismatch");
      return false;
    }
    return true;
  };
  if (const auto* r = std::get_if<net::Register>(&in.message)) {
    if (check_id(r->status)) registry_.register_node(r->status, c->id());
  } else if (const auto* h = std::get_if<net::Heartbeat>(&in.message)) {
    if (check_id(h->status)) registry_.heartbeat(h->status, c->id());
  } else if (const auto* g = std::get_if<net::Goodbye>(&in.message)) {
    registry_.deregister(hello_id, g->reason);
    c->close("goodbye");
  } else {
    spdlog::warn("registry: ignoring unexpected {} on the control port from {}", net::message_name(in.message),
                 c->peer().address);
  }
}

}  // namespace baton::registry
