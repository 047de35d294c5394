// A loopback TCP port that was free a moment ago (bound to port 0, then released), for tests
// that start servers on 127.0.0.1. The socket is close-on-exec so a child spawned meanwhile
// cannot inherit it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <stdexcept>

namespace baton::test {

namespace detail {
// A close-on-exec TCP socket bound to 127.0.0.1:0 (not listening); returns its fd and port.
inline int bind_loopback(uint16_t& port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    throw std::runtime_error("cannot bind a free port on 127.0.0.1");
  }
  port = ntohs(a.sin_port);
  return fd;
}
}  // namespace detail

inline uint16_t free_loopback_port() {
  uint16_t port = 0;
  close(detail::bind_loopback(port));
  return port;
}

// A loopback port where connections are refused for as long as this object lives: bound but not
// listening, so no other process - a worker of a test running in parallel - can take it. (A port
// released by free_loopback_port can be handed to the next process that binds port 0: a test
// expecting "refused" once reached a worker of another test there.)
class RefusingPort {
 public:
  RefusingPort() : fd_(detail::bind_loopback(port_)) {}
  ~RefusingPort() { close(fd_); }
  RefusingPort(const RefusingPort&) = delete;
  RefusingPort& operator=(const RefusingPort&) = delete;
  uint16_t port() const { return port_; }

 private:
  uint16_t port_ = 0;
  int fd_;
};

}  // namespace baton::test
