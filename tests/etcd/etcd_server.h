// A real etcd for tests: `etcd` (from $BATON_ETCD or PATH) on 127.0.0.1 with free client and
// peer ports and a fresh data dir under the test temp dir; stop() or the destructor SIGTERMs
// it (SIGKILL after 5 s) and reaps it. Tests skip with a WARN only when no etcd binary exists.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

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

  std::string dir_, log_path_;
  pid_t pid_ = -1;
  uint16_t client_port_ = 0;
};

// One server per test process, started on first use; nullptr (after printing a WARN once)
// when no etcd binary exists.
EtcdServer* shared_etcd();

}  // namespace baton::test
