// Sub-command registry of engine-gguf. Each command lives in its own .cpp file and registers
// itself at static-initialisation time, so adding a command never edits main.cpp:
//
//   static const bool registered = baton::tools::register_command(
//       {"info", "print a GGUF file's header", [](int argc, char** argv) { ... return 0; }});
//
// run() receives argv with argv[0] = the command name (ready for CLI11's app.parse(argc, argv)).
// It may throw: main() prints "error: <what>" and exits 1.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace baton::tools {

struct Command {
  std::string name, help;
  std::function<int(int argc, char** argv)> run;
};

// Returns true (for the static-initialiser idiom); a repeated name throws std::logic_error.
bool register_command(Command command);
// All registered commands, sorted by name.
const std::vector<Command>& commands();

// Parses a command's options. Returns nullopt on success; otherwise CLI11 has printed the
// help text (exit code 0) or the parse error (exit code != 0) and the command should return it.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return std::nullopt;
}

}  // namespace baton::tools
