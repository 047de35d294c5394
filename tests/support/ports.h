// Loopback TCP ports for tests that start servers on 127.0.0.1. A port a test picks now and a
// server binds later must not come from the kernel's ephemeral range: every process that binds
// port 0 or connects out in the meantime (a worker of this test, another test running in
// parallel) draws from that range and can take it. (A CI run failed that way: "cannot listen on
// 127.0.0.1:34332: bind: Address already in use".) So free_loopback_ports picks random ports
// outside the ephemeral range and checks that they bind. Sockets are close-on-exec so a child
// spawned meanwhile cannot inherit them.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <random>
#include <stdexcept>
#include <utility>

namespace baton::test {

namespace detail {
struct BoundSocket {
  int fd;
  uint16_t port;
};

// A close-on-exec TCP socket bound to 127.0.0.1:port (0: any free port), not listening; fd -1 if
// the port cannot be bound.
inline BoundSocket try_bind_loopback(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {-1, port};
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return {-1, port};
  }
  return {fd, ntohs(a.sin_port)};
}

// A close-on-exec TCP socket bound to 127.0.0.1:0, not listening.
inline BoundSocket bind_loopback() {
  const BoundSocket s = try_bind_loopback(0);
  if (s.fd < 0) throw std::runtime_error("cannot bind a free port on 127.0.0.1");
  return s;
}

// Whether 127.0.0.1:port can be bound right now.
inline bool can_bind_loopback(uint16_t port) {
  const BoundSocket s = try_bind_loopback(port);
  if (s.fd >= 0) close(s.fd);
  return s.fd >= 0;
}

// The kernel's ephemeral port range (net.ipv4.ip_local_port_range; Linux's default if unreadable).
inline std::pair<int, int> ephemeral_port_range() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int lo = 32768, hi = 60999;
  if (!(in >> lo >> hi) || lo < 1 || hi < lo || hi > 65535) return {32768, 60999};
  return {lo, hi};
}
}  // namespace detail

// `count` consecutive loopback ports that were free a moment ago, outside the ephemeral range
// (below it when there is room, else above it); returns the first.
inline uint16_t free_loopback_ports(int count) {
  const auto [lo, hi] = detail::ephemeral_port_range();
  int first = std::max(1024, lo - 16384), last = lo - count;
  if (last - first < 1024) first = hi + 1, last = 65535 - count + 1;
  if (last < first) throw std::runtime_error("no port range outside the ephemeral ports");
  thread_local std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(getpid()));
  std::uniform_int_distribution<int> pick(first, last);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = pick(rng);
    bool ok = true;
    for (int i = 0; i < count && ok; ++i) ok = detail::can_bind_loopback(static_cast<uint16_t>(port + i));
    if (ok) return static_cast<uint16_t>(port);
  }
  throw std::runtime_error("no free loopback ports outside the ephemeral range");
}

inline uint16_t free_loopback_port() { return free_loopback_ports(1); }

// A loopback port where connections are refused for as long as this object lives: bound but not
// listening, so no other process - a worker of a test running in parallel - can take it. (A port
// released by free_loopback_port can be handed to the next process that binds port 0: a test
// expecting "refused" once reached a worker of another test there.)
class RefusingPort {
 public:
  RefusingPort() : socket_(detail::bind_loopback()) {}
  ~RefusingPort() { close(socket_.fd); }
  RefusingPort(const RefusingPort&) = delete;
  RefusingPort& operator=(const RefusingPort&) = delete;
  uint16_t port() const { return socket_.port; }

 private:
  detail::BoundSocket socket_;
};

}  // namespace baton::test
