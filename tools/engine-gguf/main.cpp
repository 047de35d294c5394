// engine-gguf: model file utilities. `engine-gguf NAME args...` runs a registered command, a
// CLI11 subcommand (see command.h); any escaped exception prints "error: ..." and exits 1.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string_view>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "tools/common_cli.h"
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

int main(int argc, char** argv) {
  baton::tools::log_to_stderr("engine-gguf");
  try {
    baton::tools::apply_log_options("engine-gguf", baton::tools::take_log_options(argc, argv));
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  CLI::App app{"GGUF model file utilities", "engine-gguf"};
  app.require_subcommand(1);
  std::vector<CLI::App*> subs;
  for (const auto& c : baton::tools::commands()) subs.push_back(app.add_subcommand(c.name, c.help));
  auto parse = [&]() {
    return baton::tools::parse_tool_command_line(app, argc, argv, "engine-gguf", {.ignore_gpu_layers = false});
  };
  // The command is the first word: its function adds its options to its subcommand, then parses.
  if (argc < 2) {
    fmt::print(stderr, "{}", app.help());
    return 1;
  }
  const std::string_view name = argv[1];
  if (name.front() == '-') return parse().value_or(1);  // --help, --version
  try {
    const auto& cs = baton::tools::commands();
    for (size_t i = 0; i < cs.size(); ++i)
      if (cs[i].name == name) return cs[i].run(*subs[i], parse);
    fmt::print(stderr, "error: unknown command '{}'\n{}", name, app.help());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
