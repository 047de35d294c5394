// Node: the io_context and its thread, the registry of live sessions used for a clean stop(),
// and the blocking facade (listen, connect, stop) over node_listen.cpp and node_connect.cpp.
#include "net/node.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/base/error.h"
#include "net/detail/node_impl.h"

namespace baton::net {

using asio::ip::tcp;
using detail::Session;

std::string_view to_string(CloseKind kind) {
  switch (kind) {
    case CloseKind::kLocal: return "local";
    case CloseKind::kPeerClosed: return "peer-closed";
    case CloseKind::kIoError: return "io-error";
    case CloseKind::kProtocol: return "protocol";
    case CloseKind::kTimeout: return "timeout";
    case CloseKind::kAuth: return "auth";
    case CloseKind::kVersion: return "version";
    case CloseKind::kShutdown: return "shutdown";
  }
  return "unknown";
}

namespace {

std::atomic<uint64_t> g_next_session_id{1};

}  // namespace

Node::Impl::Impl(NodeOptions opts, MessageHandler on_message, ConnectionHandler on_conn)
    : options(std::move(opts)),
      config{Hello{kProtocolVersion, options.features, options.node_id, options.role, options.auth->mode()},
             *options.auth,
             options.limits,
             options.handshake_timeout,
             options.idle_timeout,
             options.close_linger,
             options.max_outbox_bytes,
             std::move(on_message),
             options.clock_probe_interval,
             options.test_write_delay},
      on_connection(std::move(on_conn)) {}

void Node::Impl::session_ended(uint64_t id) {
  std::lock_guard lock(sessions_mutex);
  sessions.erase(id);
}

std::shared_ptr<Session> Node::Impl::make_session(tcp::socket socket) {
  auto s = std::make_shared<Session>(std::move(socket), config, *this, g_next_session_id.fetch_add(1));
  std::lock_guard lock(sessions_mutex);
  sessions.emplace(s->id(), s);
  return s;
}

std::vector<std::shared_ptr<Session>> Node::Impl::live_sessions() {
  std::vector<std::shared_ptr<Session>> out;
  std::lock_guard lock(sessions_mutex);
  for (auto& [id, weak] : sessions)
    if (auto s = weak.lock()) out.push_back(std::move(s));
  return out;
}

void Node::Impl::require_not_io_thread(std::string_view what) const {
  if (std::this_thread::get_id() == thread.get_id())
    fail("net: Node::{} must not be called on the I/O thread (from a handler)", what);
}

void Node::Impl::connection_ready(const std::shared_ptr<Session>& s) {
  spdlog::debug("net: connection {} with {} ({}) authenticated", s->id(), s->peer().hello.node_id, s->peer().address);
  if (!on_connection) return;
  try {
    on_connection(s);
  } catch (const std::exception& e) {
    spdlog::error("net: connection handler threw: {}", e.what());
    s->close(fmt::format("the connection handler threw: {}", e.what()));
  }
}

void Node::Impl::cancel_everything() {  // I/O thread
  std::error_code ignored;
  for (auto& acceptor : acceptors) acceptor->close(ignored);
  for (auto* timer : timers) timer->cancel();
  for (auto* socket : connecting) socket->close(ignored);
  for (auto& s : live_sessions()) s->abort({CloseKind::kShutdown, "the node stopped"});
}

void Node::Impl::log_escaped(std::exception_ptr e, std::string_view what) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    spdlog::error("net: {} failed: {}", what, ex.what());
  }
}

Node::Node(NodeOptions options, MessageHandler on_message, ConnectionHandler on_connection) {
  if (!options.auth)
    fail(
        "net: NodeOptions.auth is not set: give a cluster secret or choose insecure mode "
        "explicitly");
  if (!on_message) fail("net: Node needs a message handler");
  impl_ = std::make_unique<Impl>(std::move(options), std::move(on_message), std::move(on_connection));
  impl_->work.emplace(impl_->io.get_executor());
  impl_->thread = std::thread([impl = impl_.get()] {
    try {
      impl->io.run();
    } catch (const std::exception& e) {
      spdlog::error("net: I/O thread stopped by an exception: {}", e.what());
    }
    impl->thread_done.set_value();
  });
}

Node::~Node() { stop(); }

uint16_t Node::listen(const std::string& host, uint16_t port) {
  impl_->require_not_io_thread("listen");
  if (impl_->stopping) fail("net: cannot listen on {}:{}: the node is stopped", host, port);
  auto future = asio::co_spawn(impl_->io, impl_->open_listener(host, port), asio::use_future);
  try {
    return future.get();
  } catch (const std::exception& e) {
    fail("net: cannot listen on {}:{}: {}", host, port, e.what());
  }
}

ConnectionPtr Node::connect(const std::string& host, uint16_t port, const ConnectOptions& options) {
  impl_->require_not_io_thread("connect");
  if (impl_->stopping) throw ConnectError(ConnectFailure::kStopped, host, port, "the node is stopped");
  auto future = asio::co_spawn(impl_->io, impl_->connect_loop(host, port, options), asio::use_future);
  Impl::ConnectResult result;
  try {
    result = future.get();
  } catch (const std::exception& e) {
    throw ConnectError(ConnectFailure::kLocal, host, port, e.what());
  }
  if (!result.connection) throw ConnectError(result.failure, host, port, result.error);
  return result.connection;
}

void Node::stop() {
  if (!impl_) return;
  impl_->require_not_io_thread("stop");
  {
    std::lock_guard lock(impl_->stop_mutex);
    if (impl_->stopped) return;
    impl_->stopped = true;
  }
  impl_->stopping = true;
  asio::post(impl_->io, [impl = impl_.get()] { impl->cancel_everything(); });
  impl_->work.reset();
  auto done = impl_->thread_done.get_future();
  if (done.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    spdlog::warn("net: I/O thread still busy 5 s after stop(); stopping it hard");
    impl_->io.stop();
  }
  impl_->thread.join();
  for (auto& s : impl_->live_sessions()) s->release_io();
  impl_->acceptors.clear();
}

size_t Node::connection_count() const {
  std::lock_guard lock(impl_->sessions_mutex);
  return impl_->sessions.size();
}

const NodeOptions& Node::options() const { return impl_->options; }

}  // namespace baton::net
