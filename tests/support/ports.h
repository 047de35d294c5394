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
struct BoundSocket {
  int fd;
  uint16_t port;
};

// A close-on-exec TCP socket bound to 127.0.0.1:0, not listening.
inline BoundSocket bind_loopback() {
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
  return {fd, ntohs(a.sin_port)};
}
}  // namespace detail

inline uint16_t free_loopback_port() {
  const detail::BoundSocket s = detail::bind_loopback();
  close(s.fd);
  return s.port;
}

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
