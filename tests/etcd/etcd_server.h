// A real etcd for tests: `etcd` (from $BATON_ETCD or PATH) on 127.0.0.1 with free client and
// peer ports and a fresh data dir under the test temp dir, its output (stdout and stderr) read
// by tests/support/process.h; stop() or the destructor SIGTERMs it (SIGKILL after 5 s) and
// reaps it. Tests skip with a WARN only when no etcd binary exists.
// Header-only so that other test modules (e.g. registry integration tests) can include
// "etcd/etcd_server.h" too.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/ports.h"
#include "engine/base/error.h"
#include "engine/registry/etcd_client.h"
#include "fixtures.h"
#include "support/process.h"

namespace baton::test {

class EtcdServer {
 public:
  // The etcd binary to run, or "" when there is none (then tests skip with a WARN).
  static std::string find_binary();

  // Starts etcd and waits (<= 15 s) until its JSON gateway answers; throws with etcd's log if
  // it does not come up.
  EtcdServer();
  ~EtcdServer();
  EtcdServer(const EtcdServer&) = delete;
  EtcdServer& operator=(const EtcdServer&) = delete;

  uint16_t client_port() const { return client_port_; }
  // etcd://127.0.0.1:<client port>/<prefix>
  std::string url(const std::string& prefix) const;
  void stop();
  std::string log() const;

 private:
  bool try_start(const std::string& binary, std::string& why);

  std::string dir_;
  std::unique_ptr<Process> process_;
  uint16_t client_port_ = 0;
};

namespace detail {

// A port the kernel considers free right now (bound to port 0, then released).
inline uint16_t free_port() { return baton::test::free_loopback_port(); }

}  // namespace detail

inline std::string EtcdServer::find_binary() {
  if (const char* env = std::getenv("BATON_ETCD"); env && *env) return env;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string candidate = dir + "/etcd";
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

inline EtcdServer::EtcdServer() {
  std::string binary = find_binary();
  if (binary.empty()) throw std::runtime_error("no etcd binary (install etcd-server)");
  std::string why;
  // A port found free may be taken before etcd binds it: retry with new ports.
  for (int attempt = 0; attempt < 3; ++attempt)
    if (try_start(binary, why)) return;
  throw std::runtime_error("etcd did not start: " + why);
}

inline bool EtcdServer::try_start(const std::string& binary, std::string& why) {
  dir_ = temp_dir();
  client_port_ = detail::free_port();
  uint16_t peer_port = detail::free_port();
  std::string client = "http://127.0.0.1:" + std::to_string(client_port_);
  std::string peer = "http://127.0.0.1:" + std::to_string(peer_port);
  std::vector<std::string> args = {binary,
                                   "--name",
                                   "baton-test",
                                   "--data-dir",
                                   dir_ + "/data",
                                   "--listen-client-urls",
                                   client,
                                   "--advertise-client-urls",
                                   client,
                                   "--listen-peer-urls",
                                   peer,
                                   "--initial-advertise-peer-urls",
                                   peer,
                                   "--initial-cluster",
                                   "baton-test=" + peer,
                                   "--logger",
                                   "zap",
                                   "--log-level",
                                   "warn"};
  ProcessOptions po;
  po.merge_stderr = true;
  process_ = std::make_unique<Process>(std::move(args), po);  // throws if it cannot spawn
  registry::EtcdClient probe("127.0.0.1", client_port_, {std::chrono::milliseconds(500)});
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < end) {
    if (process_->wait(std::chrono::milliseconds(0)) != -1) {
      why = "etcd exited at start; its log:\n" + log();
      return false;
    }
    try {
      probe.range_key("/");
      return true;
    } catch (const Error&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  stop();
  why = "etcd did not answer on " + client + " within 15 s; its log:\n" + log();
  return false;
}

inline EtcdServer::~EtcdServer() { stop(); }

inline std::string EtcdServer::url(const std::string& prefix) const {
  return "etcd://127.0.0.1:" + std::to_string(client_port_) + "/" + prefix;
}

inline void EtcdServer::stop() {
  if (process_ && process_->pid() > 0) process_->terminate(std::chrono::seconds(5));
}

inline std::string EtcdServer::log() const { return process_ ? process_->output() : std::string(); }

// One server per test process, started on first use; nullptr (after printing a WARN once)
// when no etcd binary exists.
inline EtcdServer* shared_etcd() {
  static std::unique_ptr<EtcdServer> server = []() -> std::unique_ptr<EtcdServer> {
    if (EtcdServer::find_binary().empty()) {
      std::fprintf(stderr,
                   "WARN: no etcd binary in PATH (or $BATON_ETCD): etcd tests skipped; install "
                   "the Debian package etcd-server\n");
      return nullptr;
    }
    return std::make_unique<EtcdServer>();
  }();
  return server.get();
}

}  // namespace baton::test
