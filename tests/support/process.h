// A child process for tests that run the tools: spawned with posix_spawn, its stdout read by a
// background thread into a buffer (so a chatty child never blocks on a full pipe), stderr
// merged into it, sent to a file, or inherited. The destructor SIGKILLs and reaps it, so
// every test path cleans up its children. Header-only; POSIX.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace baton::test {

struct ProcessOptions {
  bool merge_stderr = false;  // stderr into the stdout buffer
  std::string stderr_path;    // otherwise: stderr to this file ("" = inherit the test's)
  bool stdin_pipe = false;    // stdin from write_stdin() / close_stdin() (else inherited)
};

class Process {
 public:
  // argv[0] is the executable's path. Throws std::runtime_error if it cannot be spawned.
  explicit Process(std::vector<std::string> argv, ProcessOptions options = {}) : options_(std::move(options)) {
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe failed");
    int in[2] = {-1, -1};
    if (options_.stdin_pipe && pipe(in) != 0) throw std::runtime_error("pipe failed");
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    if (options_.merge_stderr) posix_spawn_file_actions_adddup2(&fa, out[1], 2);
    else if (!options_.stderr_path.empty())
      posix_spawn_file_actions_addopen(&fa, 2, options_.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    posix_spawn_file_actions_addclose(&fa, out[1]);
    if (options_.stdin_pipe) {
      posix_spawn_file_actions_adddup2(&fa, in[0], 0);
      posix_spawn_file_actions_addclose(&fa, in[0]);
      posix_spawn_file_actions_addclose(&fa, in[1]);
    }
    const int rc = posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    if (options_.stdin_pipe) {
      close(in[0]);
      stdin_ = in[1];
    }
    if (rc != 0) {
      close(out[0]);
      pid_ = -1;
      throw std::runtime_error("cannot spawn " + argv[0]);
    }
    reader_ = std::thread([this, fd = out[0]] { read_all(fd); });
  }
  ~Process() {
    close_stdin();
    kill_now();
    if (reader_.joinable()) reader_.join();  // EOF once the child is gone
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }

  // With ProcessOptions::stdin_pipe: writes to the child's stdin / closes it (the child sees EOF).
  void write_stdin(const std::string& text) {
    size_t done = 0;
    while (stdin_ >= 0 && done < text.size()) {
      const ssize_t n = ::write(stdin_, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw std::runtime_error("cannot write to the child's stdin");
      done += static_cast<size_t>(n);
    }
  }
  void close_stdin() {
    if (stdin_ >= 0) ::close(stdin_);
    stdin_ = -1;
  }

  // Everything the child wrote to stdout (and stderr if merged) so far.
  std::string output() const {
    std::lock_guard lock(mutex_);
    return output_;
  }
  // The stderr file's content (ProcessOptions::stderr_path), or "".
  std::string error_output() const {
    if (options_.stderr_path.empty()) return "";
    std::ifstream in(options_.stderr_path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  // Waits until `text` has appeared in the output (true), or `limit` passed or the output
  // ended without it (false).
  bool wait_for_output(const std::string& text, std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex_);
    return grew_.wait_for(lock, limit, [&] { return output_.find(text) != std::string::npos || eof_; }) &&
           output_.find(text) != std::string::npos;
  }
  // The first complete output line containing `text` (without its newline), waiting up to `limit`.
  std::optional<std::string> wait_for_line(const std::string& text, std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex_);
    std::optional<std::string> line;
    auto find = [&] {
      const size_t at = output_.find(text);
      if (at == std::string::npos) return false;
      const size_t end = output_.find('\n', at);
      if (end == std::string::npos) return false;
      const size_t begin = output_.rfind('\n', at);
      line = output_.substr(begin == std::string::npos ? 0 : begin + 1,
                            end - (begin == std::string::npos ? 0 : begin + 1));
      return true;
    };
    grew_.wait_for(lock, limit, [&] { return find() || eof_; });
    return line;
  }

  // Exit status (128 + signal if killed by one), or -1 if still running after `limit`.
  int wait(std::chrono::milliseconds limit) {
    if (pid_ <= 0) return status_;
    const auto end = std::chrono::steady_clock::now() + limit;
    while (true) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        // The reader thread may still hold the child's last output (a loaded machine made a test
        // read an empty output after a clean exit): output() is complete once it reached EOF.
        // Bounded, in case a grandchild still holds the pipe open.
        std::unique_lock lock(mutex_);
        grew_.wait_for(lock, std::chrono::seconds(10), [&] { return eof_; });
        return status_;
      }
      if (std::chrono::steady_clock::now() >= end) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  // SIGTERM, then wait up to `limit`: the exit status, or -1 if it had to be killed.
  int terminate(std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    const int status = wait(limit);
    if (status == -1) kill_now();
    return status;
  }
  void signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  // SIGSTOP, then wait until the kernel reports the child stopped (true), or `limit` passed
  // (false). kill() only queues the stop: it takes effect when one of the child's threads runs to
  // take it, and until then the child's other threads keep working; on a loaded machine a test
  // saw a "frozen" worker answer a whole request after kill() had returned.
  bool freeze(std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
    if (pid_ <= 0 || ::kill(pid_, SIGSTOP) != 0) return false;
    const auto end = std::chrono::steady_clock::now() + limit;
    while (true) {
      int status = 0;
      const pid_t got = waitpid(pid_, &status, WNOHANG | WUNTRACED);
      if (got == pid_ && WIFSTOPPED(status)) return true;
      if (got == pid_) {  // it ended instead: reaped here, as wait() would
        pid_ = -1;
        status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return false;
      }
      if (std::chrono::steady_clock::now() >= end) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  void thaw() { signal(SIGCONT); }
  void kill_now() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
      status_ = 128 + SIGKILL;
    }
  }

 private:
  void read_all(int fd) {
    char buf[4096];
    while (true) {
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      std::lock_guard lock(mutex_);
      if (n <= 0) {
        eof_ = true;
        grew_.notify_all();
        break;
      }
      output_.append(buf, static_cast<size_t>(n));
      grew_.notify_all();
    }
    close(fd);
  }

  ProcessOptions options_;
  int stdin_ = -1;
  pid_t pid_ = -1;
  int status_ = -1;
  std::thread reader_;
  mutable std::mutex mutex_;
  std::condition_variable grew_;
  std::string output_;
  bool eof_ = false;
};

// What a shell command printed (stdout and stderr when the command says 2>&1) and its exit
// status (-1 when it did not exit normally).
struct ShellResult {
  int status = -1;
  std::string out;
};

// Runs `command` with /bin/sh and waits for it (popen). Throws when the shell cannot start.
inline ShellResult run_shell(const std::string& command) {
  ShellResult r;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) throw std::runtime_error("popen failed for: " + command);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// Polls `condition` every 20 ms until it holds (true) or `limit` passes (false).
template <class F>
bool eventually_true(F&& condition, std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace baton::test
