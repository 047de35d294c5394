// One TCP connection: handshake (Hello + authentication), then a reader coroutine, a writer
// coroutine draining the outbox, and a watchdog (idle timeout, close linger), raced so that
// the first to end closes the connection. Internal to net/: includes Asio. Its sources, one job
// each: handshake.cpp, session_framing.cpp (reader, writer), session_watchdog.cpp (timers, clock
// probes), session_connection.cpp (the thread-safe Connection methods), session.cpp (the serve
// race and the end of a connection).
//
// Threading: every coroutine and timer runs on the Node's single I/O thread; the public
// Connection methods may be called from any thread and reach the I/O thread through
// asio::post under mutex_. Lifetime: coroutines hold a shared_ptr to the session; the Node
// calls release_io() after joining its thread, so a handle kept by the user never touches
// a destroyed io_context.
#pragma once

#include <asio.hpp>

#include <array>
#include <chrono>
#include <deque>
#include <mutex>
#include <optional>

#include "net/auth.h"
#include "net/codec.h"
#include "net/node.h"
#include "net/wire_crypto.h"

namespace baton::net::detail {

using Clock = std::chrono::steady_clock;

// Nanoseconds of the steady clock, as clock probes carry them.
inline int64_t steady_ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// What every session of one Node shares; immutable after the Node starts.
struct SessionConfig {
  Hello hello;  // what this node says first
  AuthConfig auth;
  FrameLimits limits;
  std::chrono::milliseconds handshake_timeout;
  std::chrono::milliseconds idle_timeout;
  std::chrono::milliseconds close_linger;
  size_t max_outbox_bytes;
  MessageHandler on_message;
  std::chrono::milliseconds clock_probe_interval{0};  // NodeOptions::clock_probe_interval
  std::chrono::milliseconds test_write_delay{0};
};

// The Node, as seen by its sessions (called on the I/O thread).
class SessionHost {
 public:
  virtual void session_ended(uint64_t id) = 0;

 protected:
  ~SessionHost() = default;
};

class Session final : public Connection, public std::enable_shared_from_this<Session> {
 public:
  Session(asio::ip::tcp::socket socket, const SessionConfig& config, SessionHost& host, uint64_t id);
  ~Session() override;

  // Hello both ways, then the challenge-response unless both sides run insecure, within
  // `timeout`. nullopt on success; otherwise the reason (the caller then calls finish()).
  asio::awaitable<std::optional<CloseInfo>> handshake(AuthSide side, std::chrono::milliseconds timeout);
  // How far an accepted connection got in its handshake: 0 nothing yet, 1 a valid Hello
  // received (the accept budget drops the least advanced first). I/O thread.
  int handshake_progress() const { return handshake_progress_; }
  // After a successful handshake: runs until the connection ends, then finish(). Never throws.
  asio::awaitable<void> serve();
  // Closes the socket, fires on_closed, tells the host. Idempotent; I/O thread.
  void finish();
  // Records `info` as the reason and closes the socket so every pending operation ends.
  // I/O thread.
  void abort(CloseInfo info);
  // After the I/O thread has stopped: drops the socket and timers. Any thread, once.
  void release_io();

  // Connection
  bool send(const Message& message, Payload body) override;
  void close(std::string reason) override;
  void on_closed(std::function<void(const CloseInfo&)> callback) override;
  bool is_open() const override;
  std::optional<CloseInfo> close_info() const override;
  const PeerInfo& peer() const override { return peer_; }
  uint64_t id() const override { return id_; }
  std::optional<ClockEstimate> clock() const override;

 private:
  struct Frame {
    Message message;
    Payload body;
  };
  struct OutFrame {
    FrameHead head;
    Payload body;
    // A ClockPing/ClockPong: encoded by the writer, with its send time, when it is written.
    std::optional<Message> probe;
    size_t bytes() const { return head.prefix.size() + head.header.size() + body.size(); }
  };

  asio::awaitable<std::optional<CloseInfo>> run_handshake(AuthSide side);
  asio::awaitable<std::optional<CloseInfo>> server_handshake();
  asio::awaitable<std::optional<CloseInfo>> client_handshake();
  // Reads one frame; the error is why the connection must end.
  asio::awaitable<Expected<Frame, CloseInfo>> read_frame(const FrameLimits& limits);
  // Writes one frame directly (handshake only: the writer is not running yet).
  asio::awaitable<std::optional<CloseInfo>> write_now(const Message& message);

  asio::awaitable<void> reader();
  asio::awaitable<void> writer();
  asio::awaitable<void> watchdog();
  // Runs one of the three above; an exception becomes the close reason, so the race still
  // ends (the operator|| only cancels the others when one finishes without throwing).
  asio::awaitable<void> guarded(asio::awaitable<void> task, std::string_view name);

  // First reason wins; true if this call set it.
  bool record_close(CloseInfo info);
  bool ended() const;
  std::string who() const;  // "peer 'id' (address)" for messages
  void wake();              // I/O thread: wake the writer and the watchdog
  // I/O thread: a probe goes to the front of the outbox (it is small and carries its own
  // send time, so it may overtake data frames).
  void queue_probe(Message probe);
  // I/O thread: a clock probe read at `received`; true if `m` was one (handled here).
  bool handle_probe(const Message& m, Clock::time_point received);

  const SessionConfig& config_;
  SessionHost& host_;
  const uint64_t id_;
  PeerInfo peer_;

  const asio::any_io_executor executor_;  // posting target for user threads

  // After a secure handshake: the writer's and the reader's halves (both nullopt when
  // insecure); every frame is then sealed (net/wire_crypto.h).
  void start_sealing(const SessionKeys& keys, AuthSide side);

  // I/O-thread state
  std::optional<FrameCipher> send_cipher_;
  std::optional<FrameCipher> recv_cipher_;
  std::vector<uint8_t> sealed_;  // the writer's reused buffer for one sealed frame
  std::optional<asio::ip::tcp::socket> socket_;
  std::optional<asio::steady_timer> wake_timer_;  // the writer sleeps on it
  std::optional<asio::steady_timer> watchdog_timer_;
  std::optional<asio::steady_timer> delay_timer_;  // test_write_delay
  Clock::time_point last_activity_;
  bool is_client_ = false;  // this side opened the connection
  int handshake_progress_ = 0;
  bool probing_ = false;  // this side sends clock probes
  int probes_sent_ = 0;
  Clock::time_point next_probe_{};
  std::array<int64_t, 4> pings_out_{};  // send times of recent pings: a pong must echo one
  size_t pings_written_ = 0;
  std::optional<Clock::time_point> close_deadline_;

  // shared with user threads
  mutable std::mutex mutex_;
  std::deque<OutFrame> outbox_;
  size_t outbox_bytes_ = 0;
  bool wake_posted_ = false;
  bool serving_ = false;  // handshake done, not yet finished
  bool io_released_ = false;
  bool finished_ = false;
  std::optional<std::string> close_requested_;
  std::optional<CloseInfo> close_info_;
  std::function<void(const CloseInfo&)> on_closed_;
  ClockSync clock_;
};

}  // namespace baton::net::detail
