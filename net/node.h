// The networking facade: one I/O thread per Node runs every socket of the process; peers are
// authenticated (net/auth.h) before any message is delivered; each connection sends frames
// whole and in order from an outbox. Asio stays behind this header.
//
// Design goals: errors on the wire are values (a bad frame or a failed peer closes only that
// connection and says why); nothing here blocks the I/O thread; shutdown is clean.
// Non-goals: TLS (payloads are not encrypted; the secret only authenticates peers),
// flow control beyond TCP (a slow consumer fills the outbox up to a limit, then is closed).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "engine/base/error.h"
#include "net/auth.h"
#include "net/clock_sync.h"
#include "net/frame.h"
#include "net/messages.h"
#include "net/payload.h"

namespace baton::net {

enum class CloseKind : uint8_t {
  kLocal,       // close() on this side, or a local failure (handler threw, outbox overflow)
  kPeerClosed,  // EOF from the peer (possibly mid-frame: the reason says so)
  kIoError,     // reset, broken pipe, ...
  kProtocol,    // a malformed frame or an unexpected message; logged
  kTimeout,     // handshake or idle timeout
  kAuth,        // wrong secret, or secure vs insecure mismatch; logged
  kVersion,     // protocol version mismatch
  kShutdown,    // Node::stop()
};
std::string_view to_string(CloseKind kind);

struct CloseInfo {
  CloseKind kind = CloseKind::kLocal;
  std::string reason;  // complete sentence naming the peer and the cause
};

struct PeerInfo {
  Hello hello;          // the peer's Hello (node id, role, features, version)
  std::string address;  // "ip:port" of the remote end
};

// A handle to one authenticated connection. All methods are thread-safe.
class Connection {
 public:
  virtual ~Connection() = default;

  // Queues one frame; never blocks on the network. Frames leave whole and in call order.
  // Returns false (and drops the frame) if the connection is closed or closing, or if the
  // outbox would exceed NodeOptions::max_outbox_bytes (then the connection is closed too).
  // Throws baton::Error if `message` fails check_message() against body.size().
  virtual bool send(const Message& message, Payload body = {}) = 0;

  // Sends what is already queued (for at most NodeOptions::close_linger), then closes.
  // Idempotent.
  virtual void close(std::string reason = "closed locally") = 0;

  // `callback` runs once with why the connection ended: on the I/O thread (keep it cheap), or
  // immediately on the calling thread if the connection has already ended. Replaces an
  // earlier callback.
  virtual void on_closed(std::function<void(const CloseInfo&)> callback) = 0;

  virtual bool is_open() const = 0;
  virtual std::optional<CloseInfo> close_info() const = 0;
  virtual const PeerInfo& peer() const = 0;
  virtual uint64_t id() const = 0;  // unique within the process

  // The peer's steady clock relative to ours, from clock probes on this connection
  // (NodeOptions::clock_probe_interval); nullopt before the first probe came back.
  virtual std::optional<ClockEstimate> clock() const { return std::nullopt; }
};
using ConnectionPtr = std::shared_ptr<Connection>;

struct Incoming {
  ConnectionPtr connection;  // reply through it
  Message message;
  Payload body;  // 64-byte aligned; TensorRefs in `message` point into it
  // When the I/O thread had the whole frame (steady clock of this process), so a consumer can
  // tell time spent waiting in its queue from time on the wire.
  std::chrono::steady_clock::time_point received_at{};
};

// Runs on the I/O thread for every message received after the handshake: must be cheap
// (hand the message to another thread, e.g. through net::Inbox). If it throws, the
// connection is closed and the error logged.
using MessageHandler = std::function<void(Incoming&&)>;
// Runs on the I/O thread when a connection (accepted or connected) has been authenticated.
using ConnectionHandler = std::function<void(const ConnectionPtr&)>;

struct NodeOptions {
  std::string node_id;
  Role role = Role::kUnknown;
  uint64_t features = 0;
  std::optional<AuthConfig> auth;  // required: a secret or AuthConfig::insecure()
  FrameLimits limits;              // for frames after the handshake
  std::chrono::milliseconds handshake_timeout{5000};
  std::chrono::milliseconds idle_timeout{0};  // no frame received for this long -> close; 0 = off
  std::chrono::milliseconds close_linger{2000};
  size_t max_outbox_bytes = size_t{1} << 30;
  size_t max_connections = 1024;  // authenticated connections; more are refused at accept
  // Accepted connections still in their handshake have their own budget, so a flood of
  // unauthenticated sockets cannot take the authenticated slots. When it is full (in total,
  // or for the new connection's source address), the pending connection that got least far
  // in its handshake (the oldest among equals) from that address, or from any, is dropped.
  size_t max_pending_handshakes = 64;
  size_t max_pending_per_address = 32;
  // Clock probes (Connection::clock()): 0 = this node starts none. Otherwise a connection it
  // opened probes at once, one it accepted once the peer has probed it (so peers that never
  // probe, e.g. test clients, see no probes), a few 10 ms apart and then at this interval.
  // Probes from a peer are always answered.
  std::chrono::milliseconds clock_probe_interval{0};
  // Testing only: every outgoing frame except clock probes waits this long in the writer
  // (after send() took it, before it is written), i.e. a slow outgoing link.
  std::chrono::milliseconds test_write_delay{0};
  // Optional; runs on the I/O thread when an incoming connection fails its handshake (wrong
  // secret, version or auth-mode mismatch, bad frame, timeout). Such failures are also logged.
  std::function<void(const PeerInfo&, const CloseInfo&)> on_rejected;
};

// Why Node::connect gave up, as a type, so a caller words the failure for its users (the
// coordinator, engine-ctl doctor) without reading the text of the message. For failures that
// are retried until the deadline, the kind of the last attempt.
enum class ConnectFailure : uint8_t {
  kRefused,          // nothing listens at host:port (connection refused)
  kTimedOut,         // the TCP connect or the handshake did not finish in time
  kHostNotFound,     // the host name did not resolve
  kUnreachable,      // another socket error (no route to host, network unreachable, ...)
  kClosed,           // the peer closed or reset the connection during the handshake
  kAuthRejected,     // wrong cluster secret, or one side insecure and the other not; not retried
  kVersionMismatch,  // the peer speaks another protocol version; not retried
  kProtocol,         // the peer sent a malformed or unexpected handshake frame; not retried
  kStopped,          // this node is stopping
  kLocal,            // a local failure (a handshake step threw)
};
std::string_view to_string(ConnectFailure kind);

// Thrown by Node::connect: what() is "net: cannot connect to HOST:PORT: REASON".
class ConnectError : public Error {
 public:
  ConnectError(ConnectFailure kind, const std::string& host, uint16_t port, std::string reason);
  ConnectFailure kind() const { return kind_; }
  const std::string& reason() const { return reason_; }  // REASON alone (names the attempts, the peer)

 private:
  ConnectFailure kind_;
  std::string reason_;
};

struct ConnectOptions {
  std::chrono::milliseconds deadline{10000};  // for all attempts; a handshake may add to it
  std::chrono::milliseconds initial_backoff{50};
  std::chrono::milliseconds max_backoff{1000};
};

// Owns the io_context and its thread. Thread-safe; listen/connect/stop block the caller and
// must not be called from the I/O thread (from a handler): they throw baton::Error there.
class Node {
 public:
  // Starts the I/O thread. Throws baton::Error if options.auth is not set.
  Node(NodeOptions options, MessageHandler on_message, ConnectionHandler on_connection = {});
  ~Node();  // stop()
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Listens on host:port (port 0: any free port) and returns the bound port. Throws
  // baton::Error naming host:port if it cannot.
  uint16_t listen(const std::string& host, uint16_t port);

  // Connects and authenticates, retrying refused/unreachable attempts with exponential
  // backoff until options.deadline. Authentication and version errors are not retried.
  // Throws ConnectError (a baton::Error) naming host:port, the attempts and the last reason.
  ConnectionPtr connect(const std::string& host, uint16_t port, const ConnectOptions& options = {});

  // Closes the listeners and every connection (on_closed runs with kShutdown), joins the
  // I/O thread. Idempotent. Connections held afterwards report closed and drop sends.
  void stop();

  size_t connection_count() const;
  const NodeOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton::net
