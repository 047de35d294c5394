// Node: the io_context, its thread, listeners, outgoing connects with retry, and the registry
// of live sessions used for a clean stop().
#include "net/node.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <future>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "engine/base/error.h"
#include "net/detail/asio_util.h"
#include "net/detail/pending_handshakes.h"
#include "net/detail/session.h"

namespace baton::net {

using namespace asio::experimental::awaitable_operators;
using asio::ip::tcp;
using detail::Clock;
using detail::kNoThrow;
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

// Logs what escaped a spawned coroutine (they are written not to throw; this is the net).
void log_escaped(std::exception_ptr e, std::string_view what) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    spdlog::error("net: {} failed: {}", what, ex.what());
  }
}

// Every socket is created close-on-exec (SOCK_CLOEXEC at creation, accept4 for accepted ones),
// so a process that spawns children (a worker, a coordinator, a test) does not leak its
// listening or connected sockets into them. Asio's own open/accept/connect do not set it.
template <class Socket>
void open_cloexec(Socket& socket, const tcp& protocol) {
  const int fd = ::socket(protocol.family(), SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
  if (fd < 0) throw std::system_error(errno, std::system_category(), "cannot create a TCP socket");
  std::error_code ec;
  socket.assign(protocol, fd, ec);
  if (ec) {
    ::close(fd);
    throw std::system_error(ec, "cannot adopt a TCP socket");
  }
}

// async_accept, with the accepted socket close-on-exec (the acceptor is non-blocking).
asio::awaitable<std::tuple<std::error_code, tcp::socket>> accept_cloexec(tcp::acceptor& acceptor) {
  auto executor = co_await asio::this_coro::executor;
  for (;;) {
    auto [ec] = co_await acceptor.async_wait(tcp::acceptor::wait_read, kNoThrow);
    if (ec) co_return std::tuple{ec, tcp::socket(executor)};
    const int fd = ::accept4(acceptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) continue;
      co_return std::tuple{std::error_code(errno, std::system_category()), tcp::socket(executor)};
    }
    tcp::socket socket(executor);
    std::error_code aec;
    socket.assign(acceptor.local_endpoint().protocol(), fd, aec);
    if (aec) ::close(fd);
    co_return std::tuple{aec, std::move(socket)};
  }
}

// async_connect over `endpoints` in order, each attempt on a fresh close-on-exec socket.
asio::awaitable<std::tuple<std::error_code, tcp::endpoint>> connect_cloexec(tcp::socket& socket,
                                                                            tcp::resolver::results_type endpoints) {
  std::error_code last = asio::error::host_not_found;
  for (const auto& entry : endpoints) {
    std::error_code ignored;
    socket.close(ignored);
    try {
      open_cloexec(socket, entry.endpoint().protocol());
    } catch (const std::system_error& e) {
      last = e.code();
      continue;
    }
    auto [ec] = co_await socket.async_connect(entry.endpoint(), kNoThrow);
    if (!ec) co_return std::tuple{ec, entry.endpoint()};
    last = ec;
    if (ec == asio::error::operation_aborted) break;
  }
  co_return std::tuple{last, tcp::endpoint()};
}

bool retryable(CloseKind kind) {
  return kind == CloseKind::kPeerClosed || kind == CloseKind::kIoError || kind == CloseKind::kTimeout;
}

}  // namespace

struct Node::Impl final : detail::SessionHost {
  NodeOptions options;
  detail::SessionConfig config;
  ConnectionHandler on_connection;

  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread thread;
  std::promise<void> thread_done;
  std::atomic<bool> stopping{false};
  std::mutex stop_mutex;
  bool stopped = false;

  mutable std::mutex sessions_mutex;
  std::unordered_map<uint64_t, std::weak_ptr<Session>> sessions;

  // I/O-thread only: what stop() must cancel besides sessions.
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
  std::unordered_set<asio::steady_timer*> timers;
  std::unordered_set<tcp::socket*> connecting;
  detail::PendingHandshakes pending{options.max_pending_handshakes, options.max_pending_per_address};

  Impl(NodeOptions opts, MessageHandler on_message, ConnectionHandler on_conn)
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

  void session_ended(uint64_t id) override {
    std::lock_guard lock(sessions_mutex);
    sessions.erase(id);
  }

  std::shared_ptr<Session> make_session(tcp::socket socket) {
    auto s = std::make_shared<Session>(std::move(socket), config, *this, g_next_session_id.fetch_add(1));
    std::lock_guard lock(sessions_mutex);
    sessions.emplace(s->id(), s);
    return s;
  }

  std::vector<std::shared_ptr<Session>> live_sessions() {
    std::vector<std::shared_ptr<Session>> out;
    std::lock_guard lock(sessions_mutex);
    for (auto& [id, weak] : sessions)
      if (auto s = weak.lock()) out.push_back(std::move(s));
    return out;
  }

  void require_not_io_thread(std::string_view what) const {
    if (std::this_thread::get_id() == thread.get_id())
      fail("net: Node::{} must not be called on the I/O thread (from a handler)", what);
  }

  void connection_ready(const std::shared_ptr<Session>& s) {
    spdlog::debug("net: connection {} with {} ({}) authenticated", s->id(), s->peer().hello.node_id, s->peer().address);
    if (!on_connection) return;
    try {
      on_connection(s);
    } catch (const std::exception& e) {
      spdlog::error("net: connection handler threw: {}", e.what());
      s->close(fmt::format("the connection handler threw: {}", e.what()));
    }
  }

  // ------------------------------------------------------------------------ server side

  asio::awaitable<uint16_t> open_listener(std::string host, uint16_t port) {
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

  asio::awaitable<void> accept_loop(tcp::acceptor* acceptor) {
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

  asio::awaitable<void> serve_accepted(std::shared_ptr<Session> s) {
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

  // ------------------------------------------------------------------------ client side

  // Registers an I/O object for stop() to cancel while it is awaited.
  template <class T>
  struct Registration {
    std::unordered_set<T*>& set;
    T* item;
    Registration(std::unordered_set<T*>& s, T* i) : set(s), item(i) { set.insert(item); }
    ~Registration() { set.erase(item); }
  };

  struct ConnectResult {  // default-constructible, as asio::use_future needs
    ConnectionPtr connection;
    std::string error;
  };

  asio::awaitable<ConnectResult> connect_loop(std::string host, uint16_t port, ConnectOptions opts) {
    auto deadline = Clock::now() + opts.deadline;
    auto backoff = std::chrono::duration_cast<Clock::duration>(opts.initial_backoff);
    int attempts = 0;
    std::string last = "no attempt made";
    for (;;) {
      if (stopping) co_return ConnectResult{nullptr, "the node is stopping"};
      ++attempts;
      tcp::resolver resolver(io);
      auto [rec, endpoints] = co_await resolver.async_resolve(host, std::to_string(port), kNoThrow);
      if (rec) {
        last = fmt::format("cannot resolve: {}", rec.message());
      } else {
        tcp::socket socket(io);
        Registration<tcp::socket> reg(connecting, &socket);
        auto remaining = std::max<Clock::duration>(deadline - Clock::now(), std::chrono::milliseconds(1));
        auto raced = co_await (connect_cloexec(socket, endpoints) || detail::sleep_for(remaining));
        if (stopping) co_return ConnectResult{nullptr, "the node is stopping"};
        if (raced.index() == 1) {
          last = "the TCP connect timed out";
        } else if (auto [cec, endpoint] = std::get<0>(raced); cec) {
          last = cec.message();
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
          if (!retryable(error->kind)) co_return ConnectResult{nullptr, error->reason};
          last = error->reason;
        }
      }
      auto now = Clock::now();
      if (now >= deadline)
        co_return ConnectResult{nullptr, fmt::format("gave up after {} attempts in {} ms; last error: {}", attempts,
                                                     opts.deadline.count(), last)};
      asio::steady_timer timer(io);
      Registration<asio::steady_timer> reg(timers, &timer);
      timer.expires_after(std::min(backoff, deadline - now));
      co_await timer.async_wait(kNoThrow);
      backoff = std::min<Clock::duration>(backoff * 2, opts.max_backoff);
    }
  }

  // ------------------------------------------------------------------------ shutdown

  void cancel_everything() {  // I/O thread
    std::error_code ignored;
    for (auto& acceptor : acceptors) acceptor->close(ignored);
    for (auto* timer : timers) timer->cancel();
    for (auto* socket : connecting) socket->close(ignored);
    for (auto& s : live_sessions()) s->abort({CloseKind::kShutdown, "the node stopped"});
  }
};

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
  if (impl_->stopping) fail("net: cannot connect to {}:{}: the node is stopped", host, port);
  auto future = asio::co_spawn(impl_->io, impl_->connect_loop(host, port, options), asio::use_future);
  Impl::ConnectResult result;
  try {
    result = future.get();
  } catch (const std::exception& e) {
    fail("net: cannot connect to {}:{}: {}", host, port, e.what());
  }
  if (!result.connection) fail("net: cannot connect to {}:{}: {}", host, port, result.error);
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
