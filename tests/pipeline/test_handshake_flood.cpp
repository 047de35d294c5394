// Issue 24, defect 6: connections that never authenticate must not keep a real coordinator out
// of a worker. A real engine-worker process; 1,100 loopback sockets that connect, say nothing,
// and reconnect as soon as the worker drops them; meanwhile a coordinator node connects with
// the real handshake again and again, and every attempt must get in within its connect
// deadline. (Before the pending-handshake budget the flood held the worker's 1,024 connection
// slots for the whole 5 s handshake timeout and real connects were refused.)
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>
#include <vector>

#include "fixtures.h"
#include "net/node.h"
#include "worker_process.h"

namespace {

using namespace std::chrono_literals;
using baton::test::WorkerProcess;

// Keeps `count` idle sockets connected to 127.0.0.1:port, reconnecting each one the worker
// closes (closing with an RST so no TIME_WAIT piles up on loopback).
class Flood {
 public:
  Flood(uint16_t port, size_t count) : port_(port), fds_(count, -1) {
    for (auto& fd : fds_) fd = open_one();
    thread_ = std::thread([this] { run(); });
  }
  ~Flood() {
    stop_ = true;
    thread_.join();
    for (int fd : fds_)
      if (fd >= 0) ::close(fd);
  }
  size_t reconnects() const { return reconnects_; }

 private:
  int open_one() {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    linger hard{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port_);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);  // in progress
    return fd;
  }
  void run() {
    std::vector<pollfd> polls(fds_.size());
    while (!stop_) {
      for (size_t i = 0; i < fds_.size(); ++i) {
        if (fds_[i] < 0) fds_[i] = open_one();
        polls[i] = {fds_[i], POLLIN, 0};
      }
      if (::poll(polls.data(), polls.size(), 50) <= 0) continue;
      for (size_t i = 0; i < fds_.size(); ++i) {
        if (!(polls[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char buf[256];
        ssize_t n = ::recv(fds_[i], buf, sizeof buf, 0);  // the worker's Hello, or its close
        if (n > 0 || (n < 0 && errno == EAGAIN)) continue;
        ::close(fds_[i]);
        fds_[i] = -1;
        ++reconnects_;
      }
    }
  }

  uint16_t port_;
  std::vector<int> fds_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> reconnects_{0};
  std::thread thread_;
};

}  // namespace

TEST_CASE("a flood of unauthenticated sockets never keeps an authenticated coordinator out", "[pipeline]") {
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  if (files.rlim_cur < 4096) {
    files.rlim_cur = std::min<rlim_t>(files.rlim_max, 4096);
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  REQUIRE(files.rlim_cur >= 2048);  // 1,100 flood sockets and the test's own

  const std::string secret_path = baton::test::temp_dir() + "/flood-secret";
  std::ofstream(secret_path) << "flood test secret\n";
  ::chmod(secret_path.c_str(), 0600);
  WorkerProcess w("node-01", baton::test::shared_path("models/stories260K.gguf"), {"--secret-file", secret_path});

  Flood flood(w.port(), 1100);
  // The flood is on: the worker has started dropping its sockets.
  REQUIRE(WorkerProcess::eventually_contains(w, "dropped"));

  baton::net::NodeOptions o;
  o.node_id = "coordinator";
  o.role = baton::net::Role::kCoordinator;
  o.auth = baton::net::AuthConfig::with_secret("flood test secret");
  baton::net::Node coordinator(std::move(o), [](baton::net::Incoming&&) {});
  baton::net::ConnectOptions within;
  within.deadline = 10s;
  for (int attempt = 0; attempt < 10; ++attempt) {
    INFO("attempt " << attempt);
    baton::net::ConnectionPtr c;
    REQUIRE_NOTHROW(c = coordinator.connect("127.0.0.1", w.port(), within));
    CHECK(c->is_open());
    c->close("done");
  }
  CHECK(flood.reconnects() > 1100);  // the flood really churned the whole time
}
