// Spawns build/bin/engine-coordinator with the given arguments (plus --host 127.0.0.1 --port 0)
// and reads the bound port from its "listening on http://127.0.0.1:PORT" line; the destructor
// SIGKILLs and reaps it.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "fixtures.h"

extern char** environ;

namespace baton::test {

class CoordinatorProcess {
 public:
  explicit CoordinatorProcess(std::vector<std::string> extra, std::chrono::seconds start_limit = std::chrono::seconds(30)) {
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe failed");
    std::vector<std::string> args = {binary_dir() + "/bin/engine-coordinator", "--host", "127.0.0.1", "--port", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, out[1], 2);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    int rc = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    if (rc != 0) {
      close(out[0]);
      throw std::runtime_error("cannot spawn " + args[0]);
    }
    fd_ = out[0];
    const std::string marker = "listening on http://127.0.0.1:";
    auto end = std::chrono::steady_clock::now() + start_limit;
    size_t at;
    while ((at = output_.find(marker)) == std::string::npos || output_.find('\n', at) == std::string::npos) {
      if (std::chrono::steady_clock::now() > end || !read_some(200)) {
        kill_now();
        throw std::runtime_error("engine-coordinator did not start: " + output_);
      }
    }
    port_ = std::stoi(output_.substr(at + marker.size()));
  }
  ~CoordinatorProcess() {
    kill_now();
    if (fd_ >= 0) close(fd_);
  }
  CoordinatorProcess(const CoordinatorProcess&) = delete;
  CoordinatorProcess& operator=(const CoordinatorProcess&) = delete;

  int port() const { return port_; }
  // Everything it printed so far (stdout and stderr).
  const std::string& output() {
    while (readable() && read_some(0)) {
    }
    return output_;
  }
  // SIGTERM and wait (bounded): the exit status, or -1 if it had to be killed.
  int terminate(std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    auto end = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (std::chrono::steady_clock::now() < end) {
      read_some(0);
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      usleep(20000);
    }
    kill_now();
    return -1;
  }

 private:
  bool readable() const {
    pollfd p{fd_, POLLIN, 0};
    return fd_ >= 0 && poll(&p, 1, 0) > 0;
  }
  // Reads what is available within `wait_ms`; false at EOF.
  bool read_some(int wait_ms) {
    if (fd_ < 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, wait_ms) <= 0) return true;
    char buf[4096];
    ssize_t n = read(fd_, buf, sizeof buf);
    if (n <= 0) return false;
    output_.append(buf, static_cast<size_t>(n));
    return true;
  }
  void kill_now() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  pid_t pid_ = -1;
  int fd_ = -1;
  int port_ = 0;
  std::string output_;
};

}  // namespace baton::test
