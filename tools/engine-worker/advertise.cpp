#include "advertise.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/base/error.h"

namespace baton::tools {

bool is_wildcard_address(const std::string& host) {
  return host == "0.0.0.0" || host == "::" || host == "[::]" || host.empty();
}

std::string local_address_towards(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    fail("cannot resolve {} to find the address to advertise: {} (give --advertise)", host, gai_strerror(rc));
  std::string why = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      close(fd);
      freeaddrinfo(found);
      char text[INET6_ADDRSTRLEN] = {};
      const void* addr = local.ss_family == AF_INET6
                             ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(&local)->sin6_addr)
                             : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(&local)->sin_addr);
      inet_ntop(local.ss_family, addr, text, sizeof text);
      return text;
    }
    why = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  fail("no route to {}:{} to find the address to advertise: {} (give --advertise)", host, port, why);
}

}  // namespace baton::tools
