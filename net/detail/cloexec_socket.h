// Every socket is created close-on-exec (SOCK_CLOEXEC at creation, accept4 for accepted ones),
// so a process that spawns children (a worker, a coordinator, a test) does not leak its
// listening or connected sockets into them. Asio's own open/accept/connect do not set it.
// Internal to net/.
#pragma once

#include <system_error>
#include <tuple>

#include "net/detail/asio_util.h"

namespace baton::net::detail {

// Opens `socket` (a socket or an acceptor) on a fresh close-on-exec descriptor. Throws
// std::system_error.
void open_cloexec(asio::ip::tcp::socket& socket, const asio::ip::tcp& protocol);
void open_cloexec(asio::ip::tcp::acceptor& acceptor, const asio::ip::tcp& protocol);

// async_accept, with the accepted socket close-on-exec (the acceptor must be non-blocking).
asio::awaitable<std::tuple<std::error_code, asio::ip::tcp::socket>> accept_cloexec(asio::ip::tcp::acceptor& acceptor);

// async_connect over `endpoints` in order, each attempt on a fresh close-on-exec socket.
asio::awaitable<std::tuple<std::error_code, asio::ip::tcp::endpoint>> connect_cloexec(
    asio::ip::tcp::socket& socket, asio::ip::tcp::resolver::results_type endpoints);

}  // namespace baton::net::detail
