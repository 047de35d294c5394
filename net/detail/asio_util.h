// Small Asio helpers shared by net/detail and net/node.cpp. Internal to net/.
#pragma once

#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/experimental/awaitable_operators.hpp>

#include <chrono>

namespace baton::net::detail {

// Completion token that returns (error_code, results...) instead of throwing.
inline constexpr auto kNoThrow = asio::experimental::as_tuple(asio::use_awaitable);

// Completes after `duration` (or when cancelled); for racing with `||`.
inline asio::awaitable<void> sleep_for(std::chrono::steady_clock::duration duration) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  timer.expires_after(duration);
  co_await timer.async_wait(kNoThrow);
}

}  // namespace baton::net::detail
