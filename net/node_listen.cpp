// Node, server side: listeners on close-on-exec sockets, the accept loop with its budgets
// (authenticated connections, pending handshakes), and the handshake of an accepted connection.
#include <spdlog/spdlog.h>

#include <stdexcept>

#include "net/detail/cloexec_socket.h"
#include "net/detail/node_impl.h"

namespace baton::net {

using asio::ip::tcp;
using detail::accept_cloexec;
using detail::open_cloexec;
using detail::Session;

asio::awaitable<uint16_t> Node::Impl::open_listener(std::string host, uint16_t port) {
  tcp::resolver resolver(io);
  auto endpoints =
      co_await resolver.async_resolve(host, std::to_string(port), tcp::resolver::passive, asio::use_awaitable);
  if (endpoints.empty()) throw std::runtime_error("no address to listen on");
  tcp::endpoint endpoint = endpoints.begin()->endpoint();
  auto acceptor = std::make_unique<tcp::acceptor>(io);
  open_cloexec(*acceptor, endpoint.protocol());
  acceptor->native_non_blocking(true);  // accept_cloexec's accept4 must not block
  acceptor->set_option(tcp::acceptor::reuse_address(true));
  acceptor->bind(endpoint);
  acceptor->listen();
  uint16_t bound = acceptor->local_endpoint().port();
  asio::co_spawn(io, accept_loop(acceptor.get()), [](std::exception_ptr e) { log_escaped(e, "accept loop"); });
  acceptors.push_back(std::move(acceptor));
  spdlog::debug("net: node '{}' listening on {}:{}", options.node_id, host, bound);
  co_return bound;
}

asio::awaitable<void> Node::Impl::accept_loop(tcp::acceptor* acceptor) {
  for (;;) {
    auto [ec, socket] = co_await accept_cloexec(*acceptor);
    if (stopping || !acceptor->is_open()) co_return;
    if (ec) {
      spdlog::warn("net: accept failed: {}", ec.message());
      co_await detail::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    size_t authenticated;
    {
      std::lock_guard lock(sessions_mutex);
      authenticated = sessions.size() - pending.size();
    }
    std::error_code ec_address;
    const auto remote = socket.remote_endpoint(ec_address);
    if (authenticated >= options.max_connections || ec_address) {
      if (!ec_address)
        spdlog::warn(
            "net: refusing a connection: {} authenticated connections already open "
            "(limit {})",
            authenticated, options.max_connections);
      std::error_code ignored;
      socket.close(ignored);
      continue;
    }
    auto session = make_session(std::move(socket));
    pending.admit(session, remote.address().to_string());  // may drop another pending one
    asio::co_spawn(io, serve_accepted(std::move(session)),
                   [](std::exception_ptr e) { log_escaped(e, "accepted connection"); });
  }
}

asio::awaitable<void> Node::Impl::serve_accepted(std::shared_ptr<Session> s) {
  auto error = co_await s->handshake(AuthSide::kServer, options.handshake_timeout);
  pending.done(s->id());
  if (error) {
    s->finish();  // logs protocol/auth/version failures
    if (options.on_rejected) {
      try {
        options.on_rejected(s->peer(), *error);
      } catch (const std::exception& e) {
        spdlog::error("net: on_rejected callback threw: {}", e.what());
      }
    }
    co_return;
  }
  connection_ready(s);
  co_await s->serve();
}

}  // namespace baton::net
