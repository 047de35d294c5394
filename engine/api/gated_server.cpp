#include "engine/api/gated_server.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "engine/api/gated_stream.h"

namespace baton::api {
namespace {

// httplib's accept loop enqueues one task per accepted socket; run it at once on the listen
// thread: it only hands the socket to the gate.
class InlineQueue final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

thread_local const GatedStream* t_stream = nullptr;  // the request a worker is serving

std::string canned(int status, const char* reason, const std::string& json, bool retry_after) {
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n{}", status,
      reason, json.size(), retry_after ? "Retry-After: 1\r\n" : "", json);
}

// Room for every connection the gate may hold (open and lingering) plus the process's own files.
void raise_descriptor_limit(size_t connections) {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return;
  const rlim_t want = static_cast<rlim_t>(2 * connections + 256);
  if (r.rlim_cur >= want) return;
  r.rlim_cur = std::min(want, r.rlim_max);
  ::setrlimit(RLIMIT_NOFILE, &r);
}

// One connection's bytes in memory (serve_bytes): reads deliver `input` and then fail, as a
// GatedStream's do at the end of the stream; writes are kept.
class InMemoryConnectionStream final : public httplib::Stream {
 public:
  InMemoryConnectionStream(std::string_view input, std::string& output) : input_(input), output_(output) {}
  bool is_readable() const override { return pos_ < input_.size(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    if (pos_ == input_.size()) {
      failed_ = true;
      return -1;
    }
    const size_t n = std::min(size, input_.size() - pos_);
    std::memcpy(ptr, input_.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    output_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 40000;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 8021;
  }
  socket_t socket() const override { return INVALID_SOCKET; }
  bool failed() const { return failed_; }
  size_t consumed() const { return pos_; }

 private:
  std::string_view input_;
  std::string& output_;
  size_t pos_ = 0;
  bool failed_ = false;
};

}  // namespace

GatedServer::GatedServer() {
  new_task_queue = [] { return new InlineQueue; };
  // httplib's default sets SO_REUSEPORT, which lets a second coordinator bind the same port and
  // silently take half the connections. SO_REUSEADDR only (a restart may rebind a port whose old
  // connections linger in TIME_WAIT); a port some process listens on fails with EADDRINUSE.
  set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
}

GatedServer::~GatedServer() { stop_connections(); }

void GatedServer::configure(GateOptions options) { options_ = std::move(options); }

bool GatedServer::current_request_over_body_limit() { return t_stream && t_stream->body_over_limit(); }

int GatedServer::bind(const std::string& host, int port) {
  int bound = port;
  errno = 0;
  if (port == 0) bound = bind_to_any_port(host);
  else if (!bind_to_port(host, port)) bound = -1;
  if (bound < 0) {
    bind_errno_ = errno;
    return -1;
  }
  // httplib listened with a backlog of 5; listen() again on a listening socket raises it.
  ::listen(svr_sock_, SOMAXCONN);
  raise_descriptor_limit(options_.gate.max_connections);
  gate_ = std::make_unique<ConnectionGate>(
      options_.gate, [this](int fd, std::string buffered) { return dispatch(fd, std::move(buffered)); },
      canned(503, "Service Unavailable", options_.overloaded_body, true),
      canned(408, "Request Timeout", options_.timed_out_body, false),
      canned(431, "Request Header Fields Too Large", options_.too_large_body, false));
  gate_->start();
  for (size_t i = 0; i < std::max<size_t>(options_.threads, 1); ++i) workers_.emplace_back([this] { work(); });
  return bound;
}

void GatedServer::stop_connections() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (gate_) gate_->stop();  // fails the reads and writes of the requests being served
  cv_.notify_all();
  for (auto& w : workers_) w.join();
  workers_.clear();
  for (auto& job : jobs_) job();  // queued requests: their sockets are closed, not served
  jobs_.clear();
}

bool GatedServer::process_and_close_socket(socket_t sock) {
  if (gate_) gate_->adopt(sock);
  else ::close(sock);
  return true;
}

bool GatedServer::dispatch(int fd, std::string buffered) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || jobs_.size() >= options_.max_queued) return false;
    jobs_.push_back([this, fd, buf = std::move(buffered)]() mutable { serve(fd, std::move(buf)); });
  }
  cv_.notify_one();
  return true;
}

void GatedServer::work() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

void GatedServer::serve(int fd, std::string buffered) {
  bool stopping;
  {
    std::lock_guard lock(mutex_);
    stopping = stopping_;
  }
  if (stopping) {
    gate_->close(fd);
    return;
  }
  GatedStream stream(fd, std::move(buffered), options_.max_body_bytes, options_.timeout);
  t_stream = &stream;
  bool client_closes = false;
  const bool answered = process_request(stream, /*close_connection=*/false, client_closes, nullptr);
  t_stream = nullptr;
  if (stream.body_over_limit()) gate_->linger(fd);  // answered 413; drop what the client still sends, then close
  else if (answered && !client_closes && !stream.failed()) gate_->resume(fd, stream.leftover());
  else gate_->close(fd);
}

std::string GatedServer::serve_bytes(std::string input) {
  std::string output;
  std::string_view rest(input);
  // The gate hands a connection over once a request's line and headers are complete.
  while (rest.find("\r\n\r\n") != std::string_view::npos) {
    InMemoryConnectionStream stream(rest, output);
    bool client_closes = false;
    const bool answered = process_request(stream, /*close_connection=*/false, client_closes, nullptr);
    if (!answered || client_closes || stream.failed() || stream.consumed() == 0) break;
    rest.remove_prefix(stream.consumed());
  }
  return output;
}

}  // namespace baton::api
