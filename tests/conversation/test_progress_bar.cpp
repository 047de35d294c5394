// engine-run's progress bar (issue 29): on a terminal (a real pseudo-terminal here) it draws a
// bar for the weights being placed and one for the prompt, then erases it and prints the same
// text as without a terminal; with stderr a pipe nothing of it is printed.
#include <catch2/catch.hpp>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "fixtures.h"
#include "support/process.h"

namespace {

using namespace std::chrono_literals;

// Runs argv with stdout and stderr on one pseudo-terminal; returns everything it wrote and sets
// `rc` to its exit code (-1 on a timeout, when it is killed).
std::string run_on_terminal(const std::vector<std::string>& argv, int& rc) {
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setenv("TERM", "xterm", 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{master, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO once the child has exited and the terminal is closed
    out.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  if (std::chrono::steady_clock::now() >= deadline) kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  close(master);
  rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// The terminal turns "\n" into "\r\n"; the bar's lines are "\r...\033[K" and the erase "\r\033[K".
std::string without_bar(std::string s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 2, "\r\n") == 0) {
      out += '\n';
      i += 2;
    } else if (s[i] == '\r') {
      const size_t end = s.find("\033[K", i);
      i = end == std::string::npos ? s.size() : end + 3;
    } else {
      out += s[i++];
    }
  }
  return out;
}

}  // namespace

TEST_CASE("engine-run draws a progress bar on a terminal and prints the same text as without one", "[conversation]") {
  const std::string engine_run = baton::test::binary_dir() + "/bin/engine-run";
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  std::string prompt = "Once upon a time there was a little girl who liked to play in the park with her friends.";
  prompt += prompt;
  // -b 8: the prompt is many chunks, so the prompt bar moves through several steps.
  const std::vector<std::string> args = {engine_run, "-m", model, "-p", prompt, "-n",          "16",  "--temp",
                                         "0",        "-t", "1",   "-b", "8",    "--log-level", "warn"};
  int rc = 0;
  const std::string terminal = run_on_terminal(args, rc);
  INFO("terminal output: " << terminal);
  REQUIRE(rc == 0);
  CHECK(terminal.find("loading weights") != std::string::npos);
  CHECK(terminal.find("100 %") != std::string::npos);
  size_t prompt_steps = 0;
  for (size_t at = terminal.find("\rprompt "); at != std::string::npos; at = terminal.find("\rprompt ", at + 1))
    ++prompt_steps;
  CHECK(prompt_steps >= 5);  // one redraw per finished chunk of 8 tokens

  baton::test::ProcessOptions po;
  po.stderr_path = baton::test::temp_dir() + "/progress-bar-pipe.err";
  baton::test::Process piped(args, po);
  REQUIRE(piped.wait(60s) == 0);
  CHECK(piped.error_output().find("loading weights") == std::string::npos);
  CHECK(piped.error_output().find('\r') == std::string::npos);
  // The text on the terminal, bar removed, is what the pipe got: stdout then the stats line.
  const std::string text = without_bar(terminal);
  INFO("piped stdout: " << piped.output());
  REQUIRE(!piped.output().empty());
  CHECK(text.rfind(piped.output(), 0) == 0);
}
