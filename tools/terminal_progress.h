// A one-line progress bar on stderr for engine-run's long loads and prompts
// ("prompt  [##########----------]  50 %  1024/2048 tokens"), only when stderr is a terminal:
// logs, pipes and --json output stay clean. Redrawn in place with '\r'; clear() erases it before
// the text that follows is printed.
#pragma once

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace baton::tools {

class TerminalProgress {
 public:
  // stderr is a terminal that draws (TERM is not "dumb").
  static bool wanted() {
    const char* term = std::getenv("TERM");
    return isatty(fileno(stderr)) && !(term && std::string_view(term) == "dumb");
  }

  void show(std::string_view label, double fraction, std::string_view detail) {
    constexpr int kWidth = 30;
    fraction = std::clamp(fraction, 0.0, 1.0);
    const int filled = static_cast<int>(fraction * kWidth + 0.5);
    fmt::print(stderr, "\r{:<15} [{}{}] {:3.0f} %  {}\033[K", label, std::string(filled, '#'),
               std::string(kWidth - filled, '-'), 100.0 * fraction, detail);
    std::fflush(stderr);
    drawn_ = true;
  }

  void clear() {
    if (!drawn_) return;
    fmt::print(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
  }

 private:
  bool drawn_ = false;
};

}  // namespace baton::tools
