#include "engine/api/connection_gate.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "engine/base/error.h"

namespace baton::api {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kScanInterval = std::chrono::milliseconds(100);

bool complete_headers(const std::string& buf) { return buf.find("\r\n\r\n") != std::string::npos; }

}  // namespace

ConnectionGate::ConnectionGate(GateLimits limits, Dispatch dispatch, std::string overloaded, std::string timed_out,
                               std::string too_large)
    : limits_(limits),
      dispatch_(std::move(dispatch)),
      overloaded_(std::move(overloaded)),
      timed_out_(std::move(timed_out)),
      too_large_(std::move(too_large)) {}

ConnectionGate::~ConnectionGate() { stop(); }

void ConnectionGate::start() {
  epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_ < 0 || wake_ < 0) fail("HTTP server: cannot create its epoll set: {}", std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_;
  ::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev);
  thread_ = std::thread([this] { run(); });
}

void ConnectionGate::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
    for (auto& [fd, c] : conns_) ::close(fd);
    conns_.clear();
    for (int fd : serving_) ::shutdown(fd, SHUT_RDWR);  // the worker closes it
  }
  if (thread_.joinable()) {
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_, &one, sizeof one);
    thread_.join();
  }
  if (epoll_ >= 0) ::close(epoll_);
  if (wake_ >= 0) ::close(wake_);
  epoll_ = wake_ = -1;
}

size_t ConnectionGate::open_connections() const {
  std::lock_guard lock(mutex_);
  return conns_.size() + serving_.size();
}

void ConnectionGate::adopt(int fd) {
  std::lock_guard lock(mutex_);
  if (stopped_) {
    ::close(fd);
    return;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  size_t lingering = 0;
  for (const auto& [_, c] : conns_) lingering += c.state == State::kLingering;
  if (conns_.size() - lingering + serving_.size() >= limits_.max_connections) refuse_locked(fd, overloaded_);
  else wait_locked(fd, {}, limits_.header_timeout);
}

void ConnectionGate::resume(int fd, std::string leftover) {
  std::lock_guard lock(mutex_);
  serving_.erase(fd);
  if (stopped_) ::close(fd);
  else wait_locked(fd, std::move(leftover), limits_.keep_alive_timeout);
}

void ConnectionGate::linger(int fd) {
  std::lock_guard lock(mutex_);
  serving_.erase(fd);
  if (stopped_) ::close(fd);
  else refuse_locked(fd, {});
}

void ConnectionGate::close(int fd) {
  std::lock_guard lock(mutex_);
  serving_.erase(fd);
  ::close(fd);
}

void ConnectionGate::wait_locked(int fd, std::string buf, std::chrono::milliseconds idle) {
  if (complete_headers(buf)) {
    serving_.insert(fd);
    if (!dispatch_(fd, std::move(buf))) {
      serving_.erase(fd);
      refuse_locked(fd, overloaded_);
    }
    return;
  }
  if (buf.size() > limits_.max_header_bytes) {
    refuse_locked(fd, too_large_);
    return;
  }
  Conn c;
  c.deadline = Clock::now() + (buf.empty() ? idle : limits_.header_timeout);
  c.buf = std::move(buf);
  conns_[fd] = std::move(c);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = fd;
  ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
}

void ConnectionGate::refuse_locked(int fd, const std::string& response) {
  if (!response.empty()) {  // best effort: a short answer fits the socket buffer
    [[maybe_unused]] ssize_t n = ::send(fd, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  ::shutdown(fd, SHUT_WR);
  if (conns_.size() >= 2 * limits_.max_connections) {  // no room to linger: close now
    ::close(fd);
    return;
  }
  Conn c;
  c.state = State::kLingering;
  c.deadline = Clock::now() + limits_.linger_timeout;
  conns_[fd] = std::move(c);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = fd;
  ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
}

void ConnectionGate::drop_locked(int fd) {
  ::epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
  conns_.erase(fd);
  ::close(fd);
}

void ConnectionGate::on_readable(int fd, Conn& c) {
  char chunk[16384];
  for (;;) {
    ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {  // the client closed, or the connection failed
      drop_locked(fd);
      return;
    }
    if (c.state == State::kLingering) {
      c.drained += static_cast<size_t>(n);
      if (c.drained > limits_.linger_bytes) {
        drop_locked(fd);
        return;
      }
      continue;
    }
    if (c.buf.empty()) c.deadline = Clock::now() + limits_.header_timeout;  // a request begins
    c.buf.append(chunk, static_cast<size_t>(n));
    if (complete_headers(c.buf) || c.buf.size() > limits_.max_header_bytes) break;
  }
  if (c.state == State::kLingering) return;
  if (complete_headers(c.buf) || c.buf.size() > limits_.max_header_bytes) {
    std::string buf = std::move(c.buf);
    ::epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
    conns_.erase(fd);
    wait_locked(fd, std::move(buf), limits_.header_timeout);
  }
}

void ConnectionGate::expire(Clock::time_point now) {
  std::vector<int> late;
  for (const auto& [fd, c] : conns_)
    if (c.deadline <= now) late.push_back(fd);
  for (int fd : late) {
    auto it = conns_.find(fd);
    if (it->second.state == State::kWaiting && !it->second.buf.empty()) {
      ::epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
      conns_.erase(it);
      refuse_locked(fd, timed_out_);  // headers too slow: 408
    } else {
      drop_locked(fd);  // idle, or done lingering
    }
  }
}

void ConnectionGate::run() {
  std::vector<epoll_event> events(256);
  auto last_scan = Clock::now();
  for (;;) {
    int n =
        ::epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), static_cast<int>(kScanInterval.count()));
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      auto it = conns_.find(fd);
      if (it != conns_.end()) on_readable(fd, it->second);
    }
    const auto now = Clock::now();
    if (now - last_scan >= kScanInterval) {
      expire(now);
      last_scan = now;
    }
  }
}

}  // namespace baton::api
