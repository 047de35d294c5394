// Session I/O after the handshake: reader, writer, watchdog; and the thread-safe Connection
// methods. The handshake lives in handshake.cpp.
#include "net/detail/session.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/base/error.h"
#include "net/detail/asio_util.h"

namespace baton::net::detail {

using namespace asio::experimental::awaitable_operators;

Session::Session(asio::ip::tcp::socket socket, const SessionConfig& config, SessionHost& host, uint64_t id)
    : config_(config), host_(host), id_(id), executor_(socket.get_executor()), socket_(std::move(socket)) {
  wake_timer_.emplace(executor_);
  watchdog_timer_.emplace(executor_);
  delay_timer_.emplace(executor_);
  std::error_code ec;
  auto remote = socket_->remote_endpoint(ec);
  peer_.address = ec ? std::string("?") : fmt::format("{}:{}", remote.address().to_string(), remote.port());
  socket_->set_option(asio::ip::tcp::no_delay(true), ec);
}

Session::~Session() = default;

std::string Session::who() const {
  if (peer_.hello.node_id.empty()) return fmt::format("peer {}", peer_.address);
  return fmt::format("peer '{}' ({})", peer_.hello.node_id, peer_.address);
}

bool Session::record_close(CloseInfo info) {
  std::lock_guard lock(mutex_);
  if (close_info_) return false;
  close_info_ = std::move(info);
  return true;
}

bool Session::ended() const {
  std::lock_guard lock(mutex_);
  return close_info_.has_value();
}

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

int64_t steady_ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
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

asio::awaitable<void> Session::watchdog() {
  co_await asio::this_coro::throw_if_cancelled(false);
  while (!ended()) {
    auto now = Clock::now();
    auto deadline = Clock::time_point::max();
    if (config_.idle_timeout.count() > 0) {
      auto idle_deadline = last_activity_ + config_.idle_timeout;
      if (now >= idle_deadline) {
        record_close(
            {CloseKind::kTimeout, fmt::format("no frame from {} for {} ms", who(), config_.idle_timeout.count())});
        co_return;
      }
      deadline = idle_deadline;
    }
    if (close_deadline_) {
      if (now >= *close_deadline_) {
        std::lock_guard lock(mutex_);
        if (!close_info_)
          close_info_ =
              CloseInfo{CloseKind::kLocal, fmt::format("{} (closed after {} ms with {} frames still unsent to {})",
                                                       close_requested_.value_or("closed locally"),
                                                       config_.close_linger.count(), outbox_.size(), who())};
        co_return;
      }
      deadline = std::min(deadline, *close_deadline_);
    }
    if (probing_) {
      if (now >= next_probe_) {
        queue_probe(ClockPing{});
        ++probes_sent_;
        // A first few quickly, so an estimate exists before the first data frames.
        next_probe_ = now + (probes_sent_ < 4 ? std::chrono::milliseconds(10) : config_.clock_probe_interval);
      }
      deadline = std::min(deadline, next_probe_);
    }
    watchdog_timer_->expires_at(deadline);
    co_await watchdog_timer_->async_wait(kNoThrow);  // cancelled by wake() or the race
  }
}

asio::awaitable<void> Session::serve() {
  auto self = shared_from_this();
  co_await asio::this_coro::throw_if_cancelled(false);
  {
    std::lock_guard lock(mutex_);
    serving_ = true;
  }
  last_activity_ = Clock::now();
  if (is_client_ && config_.clock_probe_interval.count() > 0) {
    probing_ = true;
    next_probe_ = last_activity_;
  }
  try {
    co_await (guarded(reader(), "reader") || guarded(writer(), "writer") || guarded(watchdog(), "watchdog"));
  } catch (const std::exception& e) {
    record_close({CloseKind::kLocal, fmt::format("connection to {} failed: {}", who(), e.what())});
  }
  finish();
}

asio::awaitable<void> Session::guarded(asio::awaitable<void> task, std::string_view name) {
  co_await asio::this_coro::throw_if_cancelled(false);
  try {
    co_await std::move(task);
  } catch (const std::exception& e) {
    record_close({CloseKind::kLocal, fmt::format("connection to {} failed in its {}: {}", who(), name, e.what())});
  }
}

void Session::finish() {
  std::function<void(const CloseInfo&)> callback;
  CloseInfo info;
  {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    finished_ = true;
    if (!close_info_) close_info_ = CloseInfo{CloseKind::kLocal, fmt::format("connection to {} ended", who())};
    serving_ = false;
    outbox_.clear();
    outbox_bytes_ = 0;
    callback = std::move(on_closed_);
    on_closed_ = nullptr;
    info = *close_info_;
  }
  std::error_code ignored;
  if (socket_) socket_->close(ignored);
  socket_.reset();
  wake_timer_.reset();
  watchdog_timer_.reset();
  delay_timer_.reset();
  switch (info.kind) {
    case CloseKind::kProtocol:
    case CloseKind::kAuth:
    case CloseKind::kVersion: spdlog::warn("net: connection {} closed: {}", id_, info.reason); break;
    default: spdlog::debug("net: connection {} closed: {}", id_, info.reason);
  }
  if (callback) {
    try {
      callback(info);
    } catch (const std::exception& e) {
      spdlog::error("net: on_closed callback of connection {} threw: {}", id_, e.what());
    }
  }
  host_.session_ended(id_);
}

void Session::abort(CloseInfo info) {
  record_close(std::move(info));
  std::error_code ignored;
  if (socket_) socket_->close(ignored);
  if (wake_timer_) wake_timer_->cancel();
  if (watchdog_timer_) watchdog_timer_->cancel();
  if (delay_timer_) delay_timer_->cancel();
}

void Session::release_io() {
  {
    std::lock_guard lock(mutex_);
    io_released_ = true;
    serving_ = false;
    if (!close_info_) close_info_ = CloseInfo{CloseKind::kShutdown, "the node stopped"};
  }
  socket_.reset();
  wake_timer_.reset();
  watchdog_timer_.reset();
  delay_timer_.reset();
}

void Session::wake() {
  {
    std::lock_guard lock(mutex_);
    wake_posted_ = false;
    if (close_requested_ && !close_deadline_) close_deadline_ = Clock::now() + config_.close_linger;
  }
  if (wake_timer_) wake_timer_->cancel();
  if (watchdog_timer_) watchdog_timer_->cancel();
}

void Session::queue_probe(Message probe) {
  {
    std::lock_guard lock(mutex_);
    if (!serving_ || close_info_ || close_requested_) return;
    OutFrame frame;
    frame.probe = std::move(probe);
    outbox_bytes_ += frame.bytes();  // the writer subtracts the same when it pops it
    outbox_.push_front(std::move(frame));
  }
  if (wake_timer_) wake_timer_->cancel();
}

bool Session::handle_probe(const Message& m, Clock::time_point received) {
  if (const auto* ping = std::get_if<ClockPing>(&m)) {
    queue_probe(ClockPong{ping->sent_ns, steady_ns(received), 0});
    if (!probing_ && config_.clock_probe_interval.count() > 0) {  // the peer probes: so do we
      probing_ = true;
      next_probe_ = Clock::now();
      if (watchdog_timer_) watchdog_timer_->cancel();
    }
    return true;
  }
  if (const auto* pong = std::get_if<ClockPong>(&m)) {
    // Only an answer to a ping of ours counts (a pong made up by the peer could skew the clock).
    auto out = std::find(pings_out_.begin(), pings_out_.end(), pong->ping_sent_ns);
    if (pong->ping_sent_ns == 0 || out == pings_out_.end()) return true;
    *out = 0;
    std::lock_guard lock(mutex_);
    if (!clock_.add(pong->ping_sent_ns, pong->ping_received_ns, pong->sent_ns, steady_ns(received)))
      spdlog::debug("net: dropped an inconsistent clock probe from {}", who());
    return true;
  }
  return false;
}

std::optional<ClockEstimate> Session::clock() const {
  std::lock_guard lock(mutex_);
  return clock_.estimate(steady_ns(Clock::now()));
}

bool Session::send(const Message& message, Payload body) {
  FrameHead head = encode_frame_head(message, body.size());  // throws on a local bug
  OutFrame frame{std::move(head), std::move(body), std::nullopt};
  size_t bytes = frame.bytes();
  bool overflow = false;
  {
    std::lock_guard lock(mutex_);
    if (!serving_ || io_released_ || close_info_ || close_requested_) return false;
    if (outbox_bytes_ + bytes > config_.max_outbox_bytes) {
      overflow = true;
    } else {
      outbox_bytes_ += bytes;
      outbox_.push_back(std::move(frame));
      if (!wake_posted_) {
        wake_posted_ = true;
        asio::post(executor_, [self = shared_from_this()] { self->wake(); });
      }
    }
  }
  if (overflow) {  // no linger: the peer is not reading, waiting for it would not help
    CloseInfo info{CloseKind::kLocal, fmt::format("outbox to {} exceeded {} bytes (the peer does not keep up)", who(),
                                                  config_.max_outbox_bytes)};
    std::lock_guard lock(mutex_);
    if (!io_released_) asio::post(executor_, [self = shared_from_this(), info] { self->abort(info); });
    return false;
  }
  return true;
}

void Session::close(std::string reason) {
  std::lock_guard lock(mutex_);
  if (!serving_ || io_released_ || close_info_ || close_requested_) return;
  close_requested_ = std::move(reason);
  asio::post(executor_, [self = shared_from_this()] { self->wake(); });
}

void Session::on_closed(std::function<void(const CloseInfo&)> callback) {
  std::optional<CloseInfo> already;
  {
    std::lock_guard lock(mutex_);
    if (finished_ || io_released_) {
      already = close_info_;
    } else {
      on_closed_ = std::move(callback);
      return;
    }
  }
  if (callback && already) callback(*already);
}

bool Session::is_open() const {
  std::lock_guard lock(mutex_);
  return serving_ && !close_info_ && !close_requested_;
}

std::optional<CloseInfo> Session::close_info() const {
  std::lock_guard lock(mutex_);
  return close_info_;
}

}  // namespace baton::net::detail
