#include "engine/registry/control_listener.h"

#include <spdlog/spdlog.h>

#include "engine/base/error.h"

namespace baton::registry {

using namespace std::chrono_literals;

ControlListener::ControlListener(NodeRegistry& registry, net::AuthConfig auth, const std::string& host, uint16_t port)
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
        spdlog::error("registry: {} from {} failed: {}", net::message_name(in->message), in->connection->peer().address,
                      e.what());
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
      c->send(net::ErrorReport{
          net::ErrorCode::kBadRequest,
          fmt::format("registered as '{}' on a connection authenticated as '{}'", s.node_id, hello_id)});
      c->close("node id mismatch");
      return false;
    }
    return true;
  };
  // A record that fails check_node_record(): the node is told why and disconnected, unlisted.
  auto record = [&](const net::NodeStatus& s, bool is_register) {
    if (!check_id(s)) return;
    try {
      if (is_register) registry_.register_node(s, c->id());
      else registry_.heartbeat(s, c->id());
    } catch (const Error& e) {
      spdlog::warn("registry event=refused address={} reason=\"{}\"", c->peer().address, e.what());
      c->send(net::ErrorReport{net::ErrorCode::kBadRequest, e.what()});
      c->close("invalid node record");
    }
  };
  if (const auto* r = std::get_if<net::Register>(&in.message)) {
    record(r->status, true);
  } else if (const auto* h = std::get_if<net::Heartbeat>(&in.message)) {
    record(h->status, false);
  } else if (const auto* g = std::get_if<net::Goodbye>(&in.message)) {
    registry_.deregister(hello_id, g->reason);
    c->close("goodbye");
  } else {
    spdlog::warn("registry: ignoring unexpected {} on the control port from {}", net::message_name(in.message),
                 c->peer().address);
  }
}

}  // namespace baton::registry
