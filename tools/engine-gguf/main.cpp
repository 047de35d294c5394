// engine-gguf: model file utilities. `engine-gguf NAME args...` dispatches to a registered
// command (see command.h); any escaped exception prints "error: ..." and exits 1.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string_view>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "tools/logging.h"
#include "command.h"

namespace baton::tools {

namespace {
std::vector<Command>& registry() {
  static std::vector<Command> r;
  return r;
}
}  // namespace

bool register_command(Command command) {
  auto& r = registry();
  for (const auto& c : r)
    if (c.name == command.name) throw std::logic_error("engine-gguf: command registered twice: " + c.name);
  auto at = std::lower_bound(r.begin(), r.end(), command.name,
                             [](const Command& c, const std::string& n) { return c.name < n; });
  r.insert(at, std::move(command));
  return true;
}

const std::vector<Command>& commands() { return registry(); }

}  // namespace baton::tools

namespace {
void usage(std::FILE* to) {
  fmt::print(to, "usage: engine-gguf COMMAND [ARGS...]   (engine-gguf COMMAND --help for its options)\n\ncommands:\n");
  for (const auto& c : baton::tools::commands()) fmt::print(to, "  {:<12} {}\n", c.name, c.help);
}
}  // namespace

int main(int argc, char** argv) {
  baton::tools::log_to_stderr("engine-gguf");
  try {
    baton::tools::apply_log_options("engine-gguf", baton::tools::take_log_options(argc, argv));
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  if (argc < 2) {
    usage(stderr);
    return 1;
  }
  const std::string_view name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    usage(stdout);
    return 0;
  }
  try {
    for (const auto& c : baton::tools::commands())
      if (c.name == name) return c.run(argc - 1, argv + 1);
    fmt::print(stderr, "error: unknown command '{}'\n", name);
    usage(stderr);
    return 1;
  } catch (const CLI::ParseError& e) {
    // --help and bad options from a command's own CLI11 parser that it did not handle itself.
    return e.get_exit_code() == 0 ? 0 : (fmt::print(stderr, "error: {}\n", e.what()), 1);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
