// Node, client side: connect() resolves, connects and authenticates, retrying refused,
// unreachable and timed-out attempts with exponential backoff until its deadline, and says why it
// gave up as a ConnectFailure (authentication and version errors are not retried).
#include <fmt/format.h>

#include "net/detail/cloexec_socket.h"
#include "net/detail/node_impl.h"

namespace baton::net {

using namespace asio::experimental::awaitable_operators;
using asio::ip::tcp;
using detail::Clock;
using detail::connect_cloexec;
using detail::kNoThrow;

std::string_view to_string(ConnectFailure kind) {
  switch (kind) {
    case ConnectFailure::kRefused: return "refused";
    case ConnectFailure::kTimedOut: return "timed-out";
    case ConnectFailure::kHostNotFound: return "host-not-found";
    case ConnectFailure::kUnreachable: return "unreachable";
    case ConnectFailure::kClosed: return "closed";
    case ConnectFailure::kAuthRejected: return "auth-rejected";
    case ConnectFailure::kVersionMismatch: return "version-mismatch";
    case ConnectFailure::kProtocol: return "protocol";
    case ConnectFailure::kStopped: return "stopped";
    case ConnectFailure::kLocal: return "local";
  }
  return "unknown";
}

ConnectError::ConnectError(ConnectFailure kind, const std::string& host, uint16_t port, std::string reason)
    : Error(fmt::format("net: cannot connect to {}:{}: {}", host, port, reason)),
      kind_(kind),
      reason_(std::move(reason)) {}

namespace {

bool retryable(CloseKind kind) {
  return kind == CloseKind::kPeerClosed || kind == CloseKind::kIoError || kind == CloseKind::kTimeout;
}

// What a failed handshake means to the caller of connect().
ConnectFailure handshake_failure(CloseKind kind) {
  switch (kind) {
    case CloseKind::kTimeout: return ConnectFailure::kTimedOut;
    case CloseKind::kPeerClosed:
    case CloseKind::kIoError: return ConnectFailure::kClosed;
    case CloseKind::kAuth: return ConnectFailure::kAuthRejected;
    case CloseKind::kVersion: return ConnectFailure::kVersionMismatch;
    case CloseKind::kProtocol: return ConnectFailure::kProtocol;
    case CloseKind::kShutdown: return ConnectFailure::kStopped;
    case CloseKind::kLocal: return ConnectFailure::kLocal;
  }
  return ConnectFailure::kLocal;
}

// What a failed TCP connect means to the caller of connect().
ConnectFailure socket_failure(const std::error_code& ec) {
  if (ec == asio::error::connection_refused) return ConnectFailure::kRefused;
  if (ec == asio::error::timed_out) return ConnectFailure::kTimedOut;
  if (ec == asio::error::host_not_found || ec == asio::error::host_not_found_try_again)
    return ConnectFailure::kHostNotFound;
  return ConnectFailure::kUnreachable;
}

}  // namespace

asio::awaitable<Node::Impl::ConnectResult> Node::Impl::connect_loop(std::string host, uint16_t port,
                                                                    ConnectOptions opts) {
  auto deadline = Clock::now() + opts.deadline;
  auto backoff = std::chrono::duration_cast<Clock::duration>(opts.initial_backoff);
  int attempts = 0;
  std::string last = "no attempt made";
  ConnectFailure last_kind = ConnectFailure::kLocal;
  for (;;) {
    if (stopping) co_return ConnectResult{nullptr, "the node is stopping", ConnectFailure::kStopped};
    ++attempts;
    tcp::resolver resolver(io);
    auto [rec, endpoints] = co_await resolver.async_resolve(host, std::to_string(port), kNoThrow);
    if (rec) {
      last = fmt::format("cannot resolve: {}", rec.message());
      last_kind = ConnectFailure::kHostNotFound;
    } else {
      tcp::socket socket(io);
      Registration<tcp::socket> reg(connecting, &socket);
      auto remaining = std::max<Clock::duration>(deadline - Clock::now(), std::chrono::milliseconds(1));
      auto raced = co_await (connect_cloexec(socket, endpoints) || detail::sleep_for(remaining));
      if (stopping) co_return ConnectResult{nullptr, "the node is stopping", ConnectFailure::kStopped};
      if (raced.index() == 1) {
        last = "the TCP connect timed out";
        last_kind = ConnectFailure::kTimedOut;
      } else if (auto [cec, endpoint] = std::get<0>(raced); cec) {
        last = cec.message();
        last_kind = socket_failure(cec);
      } else {
        auto s = make_session(std::move(socket));
        auto timeout = std::min<Clock::duration>(
            options.handshake_timeout,
            std::max<Clock::duration>(deadline - Clock::now(), std::chrono::milliseconds(100)));
        auto error =
            co_await s->handshake(AuthSide::kClient, std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
        if (!error) {
          connection_ready(s);
          asio::co_spawn(io, s->serve(), [](std::exception_ptr e) { log_escaped(e, "connection"); });
          co_return ConnectResult{s, {}};
        }
        s->finish();
        if (!retryable(error->kind)) co_return ConnectResult{nullptr, error->reason, handshake_failure(error->kind)};
        last = error->reason;
        last_kind = handshake_failure(error->kind);
      }
    }
    auto now = Clock::now();
    if (now >= deadline)
      co_return ConnectResult{
          nullptr,
          fmt::format("gave up after {} attempts in {} ms; last error: {}", attempts, opts.deadline.count(), last),
          last_kind};
    asio::steady_timer timer(io);
    Registration<asio::steady_timer> reg(timers, &timer);
    timer.expires_after(std::min(backoff, deadline - now));
    co_await timer.async_wait(kNoThrow);
    backoff = std::min<Clock::duration>(backoff * 2, opts.max_backoff);
  }
}

}  // namespace baton::net
