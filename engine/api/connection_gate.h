// The HTTP server's front door. Every connection waits here, on one epoll thread and holding no
// worker thread, until its request line and headers have arrived in full; only then is it handed
// to a worker (dispatch). A client that trickles its headers (slowloris) costs a descriptor and
// a small buffer, never a thread, and is cut off at the header deadline with 408. Connections
// beyond `max_connections`, and complete requests when every worker is busy and the queue is
// full, are answered at once with 503 and Retry-After. After its response a kept-alive
// connection comes back here (resume) with any bytes already read past the request, so
// pipelined requests are answered in order.
//
// A refused connection gets its short answer, then its write side is shut and what the client
// still sends is read and dropped for a moment (a "lingering close"): closing with unread bytes
// would reset the connection, and the client could lose the answer.
//
// Thread-safety: adopt() from the listen thread, resume()/linger()/close() from workers, the
// rest from the controlling thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace baton::api {

struct GateLimits {
  size_t max_connections = 1024;                       // open (waiting + being served); beyond: 503
  size_t max_header_bytes = 64 << 10;                  // request line + headers; beyond: 431
  std::chrono::milliseconds header_timeout{10000};     // a request's first byte -> end of its headers; then 408
  std::chrono::milliseconds keep_alive_timeout{5000};  // idle between requests; then closed
  std::chrono::milliseconds linger_timeout{2000};      // reading what a refused client still sends
  size_t linger_bytes = 16 << 20;                      // ... at most this much
};

class ConnectionGate {
 public:
  // Hands a connection with a complete request (line + headers, maybe more) to a worker;
  // false when none can take it (the gate answers 503).
  using Dispatch = std::function<bool(int fd, std::string buffered)>;

  // `overloaded`, `timed_out` and `too_large`: complete HTTP responses (503, 408, 431).
  ConnectionGate(GateLimits limits, Dispatch dispatch, std::string overloaded, std::string timed_out,
                 std::string too_large);
  ~ConnectionGate();  // stop()
  ConnectionGate(const ConnectionGate&) = delete;
  ConnectionGate& operator=(const ConnectionGate&) = delete;

  void start();
  // Closes every waiting connection and shuts the sockets of those being served (their reads
  // and writes fail at once). Idempotent.
  void stop();

  void adopt(int fd);                         // a fresh connection
  void resume(int fd, std::string leftover);  // a worker answered; keep the connection alive
  void linger(int fd);                        // a worker answered and the rest is unread
  void close(int fd);                         // a worker is done with the connection

  size_t open_connections() const;

 private:
  enum class State { kWaiting, kLingering };
  struct Conn {
    State state = State::kWaiting;
    std::string buf;
    std::chrono::steady_clock::time_point deadline;
    size_t drained = 0;
  };

  void run();
  void on_readable(int fd, Conn& c);
  void expire(std::chrono::steady_clock::time_point now);
  // With mutex_ held: waits for (more of) a request, or hands a complete one to a worker.
  void wait_locked(int fd, std::string buf, std::chrono::milliseconds idle);
  void refuse_locked(int fd, const std::string& response);
  void drop_locked(int fd);  // forget and close

  GateLimits limits_;
  Dispatch dispatch_;
  std::string overloaded_, timed_out_, too_large_;
  int epoll_ = -1;
  int wake_ = -1;  // eventfd: stop
  std::thread thread_;
  mutable std::mutex mutex_;
  std::unordered_map<int, Conn> conns_;  // waiting or lingering, watched by epoll
  std::unordered_set<int> serving_;      // handed to a worker
  bool stopped_ = false;
};

}  // namespace baton::api
