// engine-worker and engine-coordinator tell systemd they are ready (Type=notify units in
// scripts/deploy/systemd): a unix datagram socket stands in for systemd's, its path in NOTIFY_SOCKET as
// systemd sets it, and the real processes must send READY=1 once they accept connections.
#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>

#include "fixtures.h"
#include "support/process.h"

namespace {

baton::test::ProcessOptions notify_merged_output() {
  baton::test::ProcessOptions o;
  o.merge_stderr = true;
  return o;
}

// What systemd's notification socket receives.
class NotifySocketStandIn {
 public:
  NotifySocketStandIn() : path_(baton::test::temp_dir() + "/notify.sock") {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    REQUIRE(path_.size() < sizeof a.sun_path);
    std::memcpy(a.sun_path, path_.c_str(), path_.size() + 1);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  }
  ~NotifySocketStandIn() { close(fd_); }
  const std::string& path() const { return path_; }

  // Datagrams received until one holds `text` (returned with those before it), or "" at the limit.
  std::string wait_for(const std::string& text, std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    std::string all;
    while (std::chrono::steady_clock::now() < end) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[4096];
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) continue;
      all.append(buf, static_cast<size_t>(n)).push_back('\n');
      if (all.find(text) != std::string::npos) return all;
    }
    return "";
  }

 private:
  std::string path_;
  int fd_ = -1;
};

std::string notify_tool(const std::string& name) {
  const std::string path = baton::test::binary_dir() + "/bin/" + name;
  if (!std::filesystem::exists(path)) FAIL(name << " is not built in " << baton::test::binary_dir() << "/bin");
  return path;
}

}  // namespace

TEST_CASE("engine-worker sends READY=1 to NOTIFY_SOCKET once it listens, STOPPING=1 on SIGTERM") {
  NotifySocketStandIn systemd;
  baton::test::Process worker(
      {"/usr/bin/env", "NOTIFY_SOCKET=" + systemd.path(), notify_tool("engine-worker"), "--host", "127.0.0.1", "--port",
       "0", "--node-id", "notify-01", "--model", baton::test::shared_path("models/stories260K.gguf"), "--insecure"},
      notify_merged_output());
  const std::string ready = systemd.wait_for("READY=1", std::chrono::seconds(30));
  INFO(worker.output());
  REQUIRE_THAT(ready, Catch::Contains("READY=1") && Catch::Contains("STATUS=listening on 127.0.0.1:"));
  // It was listening when it said so.
  CHECK(worker.wait_for_output("engine-worker notify-01 listening on 127.0.0.1:", std::chrono::seconds(10)));
  worker.signal(SIGTERM);
  CHECK_THAT(systemd.wait_for("STOPPING=1", std::chrono::seconds(10)), Catch::Contains("STOPPING=1"));
  CHECK(worker.wait(std::chrono::seconds(10)) == 0);
}

TEST_CASE("engine-coordinator sends READY=1 to NOTIFY_SOCKET once it serves") {
  NotifySocketStandIn systemd;
  baton::test::Process coordinator(
      {"/usr/bin/env", "NOTIFY_SOCKET=" + systemd.path(), notify_tool("engine-coordinator"), "--model",
       baton::test::shared_path("models/stories260K.gguf"), "--port", "0"},
      notify_merged_output());
  const std::string ready = systemd.wait_for("READY=1", std::chrono::seconds(60));
  INFO(coordinator.output());
  REQUIRE_THAT(ready, Catch::Contains("READY=1") && Catch::Contains("STATUS=serving stories260K at http://127.0.0.1:"));
  CHECK(coordinator.wait_for_output("listening on http://127.0.0.1:", std::chrono::seconds(10)));
  CHECK(coordinator.terminate() == 0);
}
