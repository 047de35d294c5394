// Close-on-exec sockets: creation, accept and connect (see cloexec_socket.h).
#include "net/detail/cloexec_socket.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace baton::net::detail {

using asio::ip::tcp;

namespace {

template <class Socket>
void open_cloexec_any(Socket& socket, const tcp& protocol) {
  const int fd = ::socket(protocol.family(), SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
  if (fd < 0) throw std::system_error(errno, std::system_category(), "cannot create a TCP socket");
  std::error_code ec;
  socket.assign(protocol, fd, ec);
  if (ec) {
    ::close(fd);
    throw std::system_error(ec, "cannot adopt a TCP socket");
  }
}

}  // namespace

void open_cloexec(tcp::socket& socket, const tcp& protocol) { open_cloexec_any(socket, protocol); }
void open_cloexec(tcp::acceptor& acceptor, const tcp& protocol) { open_cloexec_any(acceptor, protocol); }

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

}  // namespace baton::net::detail
