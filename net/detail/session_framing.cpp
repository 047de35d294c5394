// Session frames: reading one frame (prefix, header, body, and the tag of a sealed frame) with
// every failure as a CloseInfo, and the reader and writer coroutines that run after the
// handshake (the writer drains the outbox, stamping clock probes and sealing frames).
#include <fmt/format.h>

#include "net/detail/asio_util.h"
#include "net/detail/session.h"

namespace baton::net::detail {

namespace {

// Why a read or write ended, as a CloseInfo.
CloseInfo io_failure(const std::error_code& ec, std::string_view peer, std::string_view what, size_t got,
                     size_t wanted) {
  if (ec == asio::error::eof) {
    if (got == 0 && what == "frame prefix")
      return {CloseKind::kPeerClosed, fmt::format("{} closed the connection", peer)};
    return {CloseKind::kPeerClosed,
            fmt::format("{} closed the connection mid-frame ({} of {} bytes of the {})", peer, got, wanted, what)};
  }
  return {CloseKind::kIoError,
          fmt::format("{}: {} while transferring the {} ({} of {} bytes)", peer, ec.message(), what, got, wanted)};
}

}  // namespace

asio::awaitable<Expected<Session::Frame, CloseInfo>> Session::read_frame(const FrameLimits& limits) {
  std::array<uint8_t, kPrefixBytes> prefix_bytes;
  auto [ec, n] = co_await asio::async_read(*socket_, asio::buffer(prefix_bytes), kNoThrow);
  if (ec) co_return io_failure(ec, who(), "frame prefix", n, kPrefixBytes);
  last_activity_ = Clock::now();
  auto prefix = parse_prefix(prefix_bytes, limits);
  if (!prefix)
    co_return CloseInfo{CloseKind::kProtocol, fmt::format("bad frame from {}: {}", who(), prefix.error().message)};
  const bool sealed = (prefix->flags & kFlagSealed) != 0;
  if (sealed != recv_cipher_.has_value())
    co_return CloseInfo{CloseKind::kProtocol,
                        fmt::format("bad frame from {}: {} frame where this connection expects {} frames", who(),
                                    sealed ? "a sealed" : "an unsealed (plaintext)",
                                    recv_cipher_ ? "only sealed (encrypted)" : "only plaintext")};

  std::vector<uint8_t> header(prefix->header_bytes);
  std::tie(ec, n) = co_await asio::async_read(*socket_, asio::buffer(header), kNoThrow);
  if (ec) co_return io_failure(ec, who(), "frame header", n, header.size());
  last_activity_ = Clock::now();

  Payload body;
  if (prefix->body_bytes > 0) {
    try {
      body = Payload::allocate(prefix->body_bytes);
    } catch (const std::bad_alloc&) {
      co_return CloseInfo{CloseKind::kLocal,
                          fmt::format("cannot allocate a {}-byte body from {}", prefix->body_bytes, who())};
    }
    auto target = body.mutable_bytes();
    std::tie(ec, n) = co_await asio::async_read(*socket_, asio::buffer(target.data(), target.size()), kNoThrow);
    if (ec) co_return io_failure(ec, who(), "frame body", n, target.size());
    last_activity_ = Clock::now();
  }

  if (sealed) {
    std::array<uint8_t, kWireTagBytes> tag;
    std::tie(ec, n) = co_await asio::async_read(*socket_, asio::buffer(tag), kNoThrow);
    if (ec) co_return io_failure(ec, who(), "frame tag", n, tag.size());
    last_activity_ = Clock::now();
    const uint64_t index = recv_cipher_->counter();
    std::span<uint8_t> body_bytes = body.empty() ? std::span<uint8_t>() : body.mutable_bytes();
    if (!recv_cipher_->open(prefix_bytes, header, body_bytes, tag))
      co_return CloseInfo{CloseKind::kAuth,
                          fmt::format("frame {} from {} failed authentication (AES-256-GCM tag mismatch: the "
                                      "frame was altered, replayed, reordered or one before it was lost); "
                                      "closing the connection",
                                      index, who())};
  }

  auto message = decode_header(header, prefix->body_bytes);
  if (!message)
    co_return CloseInfo{CloseKind::kProtocol, fmt::format("bad frame from {}: {}", who(), message.error().message)};
  co_return Frame{std::move(*message), std::move(body)};
}

void Session::start_sealing(const SessionKeys& keys, AuthSide side) {
  const bool client = side == AuthSide::kClient;
  send_cipher_.emplace(client ? keys.client_to_server : keys.server_to_client);
  recv_cipher_.emplace(client ? keys.server_to_client : keys.client_to_server);
}

asio::awaitable<void> Session::reader() {
  co_await asio::this_coro::throw_if_cancelled(false);
  while (!ended()) {
    auto frame = co_await read_frame(config_.limits);
    if (!frame) {
      record_close(frame.error());
      co_return;
    }
    const auto received = Clock::now();
    const Message& m = frame->message;
    if (std::holds_alternative<Hello>(m) || std::holds_alternative<AuthChallenge>(m) ||
        std::holds_alternative<AuthResponse>(m)) {
      record_close({CloseKind::kProtocol, fmt::format("{} sent {} after the handshake", who(), message_name(m))});
      co_return;
    }
    if (handle_probe(m, received)) continue;
    try {
      config_.on_message(Incoming{shared_from_this(), std::move(frame->message), std::move(frame->body), received});
    } catch (const std::exception& e) {
      record_close(
          {CloseKind::kLocal, fmt::format("the message handler threw on a message from {}: {}", who(), e.what())});
      co_return;
    }
  }
}

asio::awaitable<void> Session::writer() {
  co_await asio::this_coro::throw_if_cancelled(false);
  for (;;) {
    std::optional<OutFrame> frame;
    std::optional<std::string> drained_close;
    {
      std::lock_guard lock(mutex_);
      if (close_info_) co_return;
      if (!outbox_.empty()) {
        frame = std::move(outbox_.front());
        outbox_.pop_front();
        outbox_bytes_ -= frame->bytes();
      } else if (close_requested_) {
        drained_close = close_requested_;
      }
    }
    if (drained_close) {
      std::error_code ignored;
      socket_->shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
      record_close({CloseKind::kLocal, *drained_close});
      co_return;
    }
    if (!frame) {
      wake_timer_->expires_at(Clock::time_point::max());
      co_await wake_timer_->async_wait(kNoThrow);  // cancelled by wake()
      continue;
    }
    if (frame->probe) {
      // Stamped now, as late as possible: the peer's estimate needs the real write time.
      const int64_t now = steady_ns(Clock::now());
      if (auto* ping = std::get_if<ClockPing>(&*frame->probe)) {
        ping->sent_ns = now;
        pings_out_[pings_written_++ % pings_out_.size()] = now;
      }
      if (auto* pong = std::get_if<ClockPong>(&*frame->probe)) pong->sent_ns = now;
      frame->head = encode_frame_head(*frame->probe, 0);
    } else if (config_.test_write_delay.count() > 0) {
      delay_timer_->expires_after(config_.test_write_delay);
      co_await delay_timer_->async_wait(kNoThrow);
      if (ended()) co_return;
    }
    std::array<asio::const_buffer, 3> buffers{asio::buffer(frame->head.prefix), asio::buffer(frame->head.header),
                                              asio::buffer(frame->body.data(), frame->body.size())};
    if (send_cipher_) {  // prefix | sealed header and body | tag
      const auto& header = frame->head.header;
      frame->head.prefix =
          encode_prefix({static_cast<uint32_t>(header.size()), kFlagSealed, static_cast<uint32_t>(frame->body.size())});
      sealed_.resize(header.size() + frame->body.size() + kWireTagBytes);
      send_cipher_->seal(frame->head.prefix, header, frame->body.bytes(), sealed_);
      buffers = {asio::buffer(frame->head.prefix), asio::buffer(sealed_), asio::const_buffer()};
    }
    auto [ec, n] = co_await asio::async_write(*socket_, buffers, kNoThrow);
    if (ec) {
      record_close(io_failure(ec, who(), "outgoing frame", n, frame->bytes()));
      co_return;
    }
  }
}

}  // namespace baton::net::detail
