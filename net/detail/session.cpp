// Session lifecycle: construction, the race of reader, writer and watchdog that serve() runs
// after the handshake, and the end of a connection (finish, abort, release_io). The handshake
// lives in handshake.cpp, frames in session_framing.cpp, timers and clock probes in
// session_watchdog.cpp, the thread-safe Connection methods in session_connection.cpp.
#include "net/detail/session.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "net/detail/asio_util.h"

namespace baton::net::detail {

using namespace asio::experimental::awaitable_operators;

Session::Session(asio::ip::tcp::socket socket, const SessionConfig& config, SessionHost& host, uint64_t id)
    : config_(config), host_(host), id_(id), executor_(socket.get_executor()), socket_(std::move(socket)) {
  wake_timer_.emplace(executor_);
  watchdog_timer_.emplace(executor_);
  delay_timer_.emplace(executor_);
  std::error_code ec;
  auto remote = socket_->remote_endpoint(ec);
  peer_.address = ec ? std::string("?") : fmt::format("{}:{}", remote.address().to_string(), remote.port());
  socket_->set_option(asio::ip::tcp::no_delay(true), ec);
}

Session::~Session() = default;

std::string Session::who() const {
  if (peer_.hello.node_id.empty()) return fmt::format("peer {}", peer_.address);
  return fmt::format("peer '{}' ({})", peer_.hello.node_id, peer_.address);
}

bool Session::record_close(CloseInfo info) {
  std::lock_guard lock(mutex_);
  if (close_info_) return false;
  close_info_ = std::move(info);
  return true;
}

bool Session::ended() const {
  std::lock_guard lock(mutex_);
  return close_info_.has_value();
}

asio::awaitable<void> Session::serve() {
  auto self = shared_from_this();
  co_await asio::this_coro::throw_if_cancelled(false);
  {
    std::lock_guard lock(mutex_);
    serving_ = true;
  }
  last_activity_ = Clock::now();
  if (is_client_ && config_.clock_probe_interval.count() > 0) {
    probing_ = true;
    next_probe_ = last_activity_;
  }
  try {
    co_await (guarded(reader(), "reader") || guarded(writer(), "writer") || guarded(watchdog(), "watchdog"));
  } catch (const std::exception& e) {
    record_close({CloseKind::kLocal, fmt::format("connection to {} failed: {}", who(), e.what())});
  }
  finish();
}

asio::awaitable<void> Session::guarded(asio::awaitable<void> task, std::string_view name) {
  co_await asio::this_coro::throw_if_cancelled(false);
  try {
    co_await std::move(task);
  } catch (const std::exception& e) {
    record_close({CloseKind::kLocal, fmt::format("connection to {} failed in its {}: {}", who(), name, e.what())});
  }
}

void Session::finish() {
  std::function<void(const CloseInfo&)> callback;
  CloseInfo info;
  {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    finished_ = true;
    if (!close_info_) close_info_ = CloseInfo{CloseKind::kLocal, fmt::format("connection to {} ended", who())};
    serving_ = false;
    outbox_.clear();
    outbox_bytes_ = 0;
    callback = std::move(on_closed_);
    on_closed_ = nullptr;
    info = *close_info_;
  }
  std::error_code ignored;
  if (socket_) socket_->close(ignored);
  socket_.reset();
  wake_timer_.reset();
  watchdog_timer_.reset();
  delay_timer_.reset();
  switch (info.kind) {
    case CloseKind::kProtocol:
    case CloseKind::kAuth:
    case CloseKind::kVersion: spdlog::warn("net: connection {} closed: {}", id_, info.reason); break;
    default: spdlog::debug("net: connection {} closed: {}", id_, info.reason);
  }
  if (callback) {
    try {
      callback(info);
    } catch (const std::exception& e) {
      spdlog::error("net: on_closed callback of connection {} threw: {}", id_, e.what());
    }
  }
  host_.session_ended(id_);
}

void Session::abort(CloseInfo info) {
  record_close(std::move(info));
  std::error_code ignored;
  if (socket_) socket_->close(ignored);
  if (wake_timer_) wake_timer_->cancel();
  if (watchdog_timer_) watchdog_timer_->cancel();
  if (delay_timer_) delay_timer_->cancel();
}

void Session::release_io() {
  {
    std::lock_guard lock(mutex_);
    io_released_ = true;
    serving_ = false;
    if (!close_info_) close_info_ = CloseInfo{CloseKind::kShutdown, "the node stopped"};
  }
  socket_.reset();
  wake_timer_.reset();
  watchdog_timer_.reset();
  delay_timer_.reset();
}

}  // namespace baton::net::detail
