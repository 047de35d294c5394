// cpp-httplib's Server (Debian's shared library, 0.11.4) behind our own connection handling:
// httplib still parses requests, routes them and writes responses (process_request), but a
// connection no longer gets a thread from accept() on. The listen thread hands each accepted
// socket to the ConnectionGate (one epoll thread, header deadline, connection bound, cheap
// 503s); complete requests run on a bounded pool of workers, each through a GatedStream (body
// limit whatever the framing, read and write deadlines, pipelined bytes kept). The listen
// backlog is raised to SOMAXCONN (httplib's is 5, which reset bursts of connections).
//
// Why not httplib's own knobs: its read timeout is per recv() (a byte a second never times
// out), its payload limit ignores chunked bodies, and its thread pool takes a thread per
// connection for as long as the client keeps it open. Internal to engine/api.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/api/connection_gate.h"

namespace baton::api {

struct GateOptions {
  GateLimits gate;
  size_t threads = 16;     // workers running requests
  size_t max_queued = 64;  // complete requests waiting for a worker; beyond: 503
  size_t max_body_bytes = 8u << 20;
  std::chrono::milliseconds timeout{600000};  // a body's arrival; each response write
  std::string overloaded_body;                // JSON of the 503 the gate answers with
  std::string timed_out_body;                 // ... of the 408
  std::string too_large_body;                 // ... of the 431
};

class GatedServer : public httplib::Server {
 public:
  GatedServer();
  ~GatedServer() override;

  void configure(GateOptions options);  // before bind()
  // Binds host:port (0 = any free port) with a SOMAXCONN backlog and starts the gate and the
  // workers; the bound port, or -1.
  int bind(const std::string& host, int port);
  // errno of the last failed bind() (EADDRINUSE when another process listens on the port).
  int bind_errno() const { return bind_errno_; }
  // After stop() and the listen thread's return: closes every connection, joins the workers.
  void stop_connections();

  // On a worker thread, inside a handler or the error handler: the current request's body went
  // past the limit (its status must be 413 and the connection is closed after the answer).
  static bool current_request_over_body_limit();

  // Serves `input` as the bytes one connection sent, on the calling thread and without a socket:
  // its requests are answered in order as a kept-alive connection's would be (each once its
  // headers are complete, as the gate hands them over), until one closes the connection or the
  // bytes run out; returns every byte written. For the HTTP fuzz target (tests/fuzz/fuzz_http.cpp).
  std::string serve_bytes(std::string input);

 private:
  bool process_and_close_socket(socket_t sock) override;  // on the listen thread: to the gate
  bool dispatch(int fd, std::string buffered);            // from the gate: to a worker
  void serve(int fd, std::string buffered);               // on a worker: one request
  void work();

  GateOptions options_;
  std::unique_ptr<ConnectionGate> gate_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  int bind_errno_ = 0;
};

}  // namespace baton::api
