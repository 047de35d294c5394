#include "engine/api/gated_stream.h"

#include <netdb.h>
#include <poll.h>
#include <sys/select.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace baton::api {
namespace {

using Clock = std::chrono::steady_clock;

int millis_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

// Numeric host and port, as httplib's own stream reports them (peer_probe.h matches on them).
void ip_and_port(const sockaddr_storage& a, socklen_t len, std::string& ip, int& port) {
  char host[NI_MAXHOST];
  char serv[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return;
  ip = host;
  port = std::atoi(serv);
}

}  // namespace

GatedStream::GatedStream(int fd, std::string buffered, size_t max_body_bytes, std::chrono::milliseconds timeout)
    : fd_(fd),
      buf_(std::move(buffered)),
      max_body_bytes_(max_body_bytes),
      timeout_(timeout),
      read_deadline_(Clock::now() + timeout) {
  const size_t end = buf_.find("\r\n\r\n");
  header_bytes_ = end == std::string::npos ? buf_.size() : end + 4;
}

bool GatedStream::is_readable() const {
  if (pos_ < buf_.size()) return true;
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, millis_until(read_deadline_)) > 0;
}

bool GatedStream::is_writable() const {
  pollfd p{fd_, POLLOUT, 0};
  if (::poll(&p, 1, static_cast<int>(timeout_.count())) <= 0 || (p.revents & (POLLERR | POLLHUP))) return false;
  // Gone if the client closed its side: readable with nothing to read.
  pollfd r{fd_, POLLIN, 0};
  if (::poll(&r, 1, 0) > 0) {
    char c;
    if (::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0) return false;
  }
  return true;
}

bool GatedStream::fill() {
  buf_.clear();
  pos_ = 0;
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, millis_until(read_deadline_));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;  // the body did not arrive in time
    char chunk[16384];
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    if (n <= 0) return false;
    buf_.assign(chunk, static_cast<size_t>(n));
    return true;
  }
}

ssize_t GatedStream::read(char* ptr, size_t size) {
  if (pos_ == buf_.size() && !fill()) {
    failed_ = true;
    return -1;
  }
  const size_t n = std::min(size, buf_.size() - pos_);
  const size_t body = delivered_ + n > header_bytes_ ? delivered_ + n - header_bytes_ : 0;
  if (body > max_body_bytes_) {  // stop here: the rest is never read into memory
    over_limit_ = true;
    failed_ = true;
    return -1;
  }
  std::memcpy(ptr, buf_.data() + pos_, n);
  pos_ += n;
  delivered_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t GatedStream::write(const char* ptr, size_t size) {
  const auto deadline = Clock::now() + timeout_;
  for (;;) {
    pollfd p{fd_, POLLOUT, 0};
    int ready = ::poll(&p, 1, millis_until(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    if (n >= 0) return n;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) break;
  }
  failed_ = true;
  return -1;
}

void GatedStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) ip_and_port(a, len, ip, port);
}

void GatedStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) ip_and_port(a, len, ip, port);
}

// httplib reads socket() only to refuse descriptors beyond FD_SETSIZE, a limit of its own
// select()-based stream; this one polls, so such descriptors are reported as -1 to pass.
int GatedStream::socket() const { return fd_ < FD_SETSIZE ? fd_ : -1; }

}  // namespace baton::api
