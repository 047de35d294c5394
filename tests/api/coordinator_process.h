// Spawns build/bin/engine-coordinator with the given arguments (plus --host 127.0.0.1 --port 0)
// and reads the bound port from its "listening on http://127.0.0.1:PORT" line (stdout and
// stderr together, tests/support/process.h); the destructor SIGKILLs and reaps it.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fixtures.h"
#include "support/process.h"

namespace baton::test {

class CoordinatorProcess {
 public:
  explicit CoordinatorProcess(std::vector<std::string> extra,
                              std::chrono::seconds start_limit = std::chrono::seconds(30)) {
    std::vector<std::string> args = {binary_dir() + "/bin/engine-coordinator", "--host", "127.0.0.1", "--port", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessOptions po;
    po.merge_stderr = true;
    process_ = std::make_unique<Process>(std::move(args), po);
    const std::string marker = "listening on http://127.0.0.1:";
    auto line = process_->wait_for_line(marker, start_limit);
    if (!line) {
      process_->kill_now();
      throw std::runtime_error("engine-coordinator did not start: " + process_->output());
    }
    port_ = std::stoi(line->substr(line->find(marker) + marker.size()));
  }
  CoordinatorProcess(const CoordinatorProcess&) = delete;
  CoordinatorProcess& operator=(const CoordinatorProcess&) = delete;

  int port() const { return port_; }
  // Everything it printed so far (stdout and stderr).
  std::string output() const { return process_->output(); }
  // SIGTERM and wait (bounded): the exit status, or -1 if it had to be killed.
  int terminate(std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
    const int status = process_->terminate(limit);
    return status >= 128 ? -1 : status;
  }

 private:
  std::unique_ptr<Process> process_;
  int port_ = 0;
};

}  // namespace baton::test
