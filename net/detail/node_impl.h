// Node's state behind its facade: the io_context and its thread, the registry of live sessions
// (for a clean stop()), the listeners (node_listen.cpp) and outgoing connects with retry
// (node_connect.cpp). Internal to net/: includes Asio.
#pragma once

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "net/detail/asio_util.h"
#include "net/detail/pending_handshakes.h"
#include "net/detail/session.h"
#include "net/node.h"

namespace baton::net {

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
  std::unordered_map<uint64_t, std::weak_ptr<detail::Session>> sessions;

  // I/O-thread only: what stop() must cancel besides sessions.
  std::vector<std::unique_ptr<asio::ip::tcp::acceptor>> acceptors;
  std::unordered_set<asio::steady_timer*> timers;
  std::unordered_set<asio::ip::tcp::socket*> connecting;
  detail::PendingHandshakes pending{options.max_pending_handshakes, options.max_pending_per_address};

  Impl(NodeOptions opts, MessageHandler on_message, ConnectionHandler on_conn);

  void session_ended(uint64_t id) override;
  std::shared_ptr<detail::Session> make_session(asio::ip::tcp::socket socket);
  std::vector<std::shared_ptr<detail::Session>> live_sessions();
  void require_not_io_thread(std::string_view what) const;
  // Runs the user's ConnectionHandler for an authenticated session (closes it if that throws).
  void connection_ready(const std::shared_ptr<detail::Session>& s);
  // Logs what escaped a spawned coroutine (they are written not to throw; this is the net).
  static void log_escaped(std::exception_ptr e, std::string_view what);

  // Server side (node_listen.cpp).
  asio::awaitable<uint16_t> open_listener(std::string host, uint16_t port);
  asio::awaitable<void> accept_loop(asio::ip::tcp::acceptor* acceptor);
  asio::awaitable<void> serve_accepted(std::shared_ptr<detail::Session> s);

  // Client side (node_connect.cpp).
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
    ConnectFailure failure = ConnectFailure::kLocal;
  };

  asio::awaitable<ConnectResult> connect_loop(std::string host, uint16_t port, ConnectOptions opts);

  // Shutdown: I/O thread.
  void cancel_everything();
};

}  // namespace baton::net
