// Spawns build/bin/engine-worker on 127.0.0.1 --port 0 and reads the bound port from its start
// line; the destructor SIGKILLs and reaps it (every test path cleans up its children).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "fixtures.h"

extern char** environ;

namespace baton::test {

class WorkerProcess {
 public:
  // extra: more arguments (e.g. {"--insecure"} or {"--secret-file", path}).
  WorkerProcess(const std::string& node_id, const std::string& model, std::vector<std::string> extra) : id_(node_id) {
    log_path_ = temp_dir() + "/" + node_id + "-" + std::to_string(counter()++) + ".log";
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe failed");
    std::vector<std::string> args = {binary_dir() + "/bin/engine-worker", "--host", "127.0.0.1", "--port", "0",
                                     "--node-id", node_id, "--model", model, "--threads", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    int rc = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    if (rc != 0) {
      close(out[0]);
      throw std::runtime_error("cannot spawn " + args[0]);
    }
    // Read the start line (10 s bound).
    std::string line;
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < end) {
      pollfd p{out[0], POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      char buf[256];
      ssize_t n = read(out[0], buf, sizeof buf);
      if (n <= 0) break;
      line.append(buf, static_cast<size_t>(n));
    }
    out_fd_ = out[0];  // kept open: the worker must never get SIGPIPE on stdout
    auto at = line.find("listening on 127.0.0.1:");
    if (at == std::string::npos) {
      kill_now();
      throw std::runtime_error("engine-worker " + node_id + " did not start: '" + line + "' " + log());
    }
    port_ = static_cast<uint16_t>(std::stoi(line.substr(at + 23)));
  }
  ~WorkerProcess() {
    kill_now();
    if (out_fd_ >= 0) close(out_fd_);
  }
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  uint16_t port() const { return port_; }
  const std::string& id() const { return id_; }
  pid_t pid() const { return pid_; }

  void kill_now() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  // SIGTERM and wait (bounded); returns the exit status or -1.
  int terminate(std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    auto end = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (std::chrono::steady_clock::now() < end) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      usleep(20000);
    }
    kill_now();
    return -1;
  }
  // Polls the worker's log (stderr) for `text` for up to 5 s.
  static bool eventually_contains(const WorkerProcess& w, const std::string& text) {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < end) {
      if (w.log().find(text) != std::string::npos) return true;
      usleep(20000);
    }
    return false;
  }
  std::string log() const {
    std::ifstream in(log_path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::string id_, log_path_;
  pid_t pid_ = -1;
  int out_fd_ = -1;
  uint16_t port_ = 0;
};

}  // namespace baton::test
