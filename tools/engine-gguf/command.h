// Sub-command registry of engine-gguf. Each command lives in its own .cpp file and registers
// itself at static-initialisation time, so adding a command never edits main.cpp:
//
//   static const bool registered = baton::tools::register_command(
//       {"info", "print a GGUF file's header", [](CLI::App& app, const ParseCommandLine& parse) {
//          app.add_option(...);                  // the command's options, on its CLI11 subcommand
//          if (auto code = parse()) return *code; // help, --version or a bad option: exit with it
//          ... return 0; }});
//
// Every command is a CLI11 subcommand of one `engine-gguf` app, so `engine-gguf quantize --help`
// prints "Usage: engine-gguf quantize ..." like every other help. run() may throw: main() prints
// "error: <what>" and exits 1.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace baton::tools {

// Parses the whole command line once the command has added its options: nullopt to go on, or
// the exit code after CLI11 printed the help, the version or the error.
using ParseCommandLine = std::function<std::optional<int>()>;

struct Command {
  std::string name, help;
  std::function<int(CLI::App& app, const ParseCommandLine& parse)> run;
};

// Returns true (for the static-initialiser idiom); a repeated name throws std::logic_error.
bool register_command(Command command);
// All registered commands, sorted by name.
const std::vector<Command>& commands();

}  // namespace baton::tools
