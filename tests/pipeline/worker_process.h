// Spawns build/bin/engine-worker on 127.0.0.1 --port 0 and reads the bound port from its start
// line; stderr (the log) goes to a file. The destructor SIGKILLs and reaps it (every test path
// cleans up its children).
#pragma once

#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "fixtures.h"
#include "support/process.h"

namespace baton::test {

class WorkerProcess {
 public:
  // extra: more arguments (e.g. {"--insecure"} or {"--secret-file", path}).
  WorkerProcess(const std::string& node_id, const std::string& model, std::vector<std::string> extra) : id_(node_id) {
    log_path_ = temp_dir() + "/" + node_id + "-" + std::to_string(counter()++) + ".log";
    std::vector<std::string> args = {binary_dir() + "/bin/engine-worker",
                                     "--host",
                                     "127.0.0.1",
                                     "--port",
                                     "0",
                                     "--node-id",
                                     node_id,
                                     "--model",
                                     model,
                                     "--threads",
                                     "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessOptions po;
    po.stderr_path = log_path_;
    process_ = std::make_unique<Process>(std::move(args), po);
    const std::string marker = "listening on 127.0.0.1:";
    auto line = process_->wait_for_line(marker, std::chrono::seconds(10));
    if (!line) {
      const std::string out = process_->output();
      process_->kill_now();
      throw std::runtime_error("engine-worker " + node_id + " did not start: '" + out + "' " + log());
    }
    port_ = static_cast<uint16_t>(std::stoi(line->substr(line->find(marker) + marker.size())));
  }
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  uint16_t port() const { return port_; }
  const std::string& id() const { return id_; }
  pid_t pid() const { return process_->pid(); }

  void kill_now() { process_->kill_now(); }
  // SIGSTOP and wait until it has taken effect (support/process.h): true once frozen.
  bool freeze() { return process_->freeze(); }
  void thaw() { process_->thaw(); }
  // SIGTERM and wait (bounded); returns the exit status or -1.
  int terminate(std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
    if (process_->pid() <= 0) return -1;
    const int status = process_->terminate(limit);
    return status >= 128 ? -1 : status;  // killed by a signal
  }
  // Polls the worker's log (stderr) for `text` for up to 5 s.
  static bool eventually_contains(const WorkerProcess& w, const std::string& text) {
    return eventually_true([&] { return w.log().find(text) != std::string::npos; });
  }
  std::string log() const { return process_->error_output(); }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::string id_, log_path_;
  std::unique_ptr<Process> process_;
  uint16_t port_ = 0;
};

}  // namespace baton::test
