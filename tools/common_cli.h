// What every tool's command line shares: `--version` (the release and the wire protocol version,
// so an operator can tell at a glance whether two machines can talk), and the llama.cpp flag
// spellings people type from habit that CLI11 would otherwise misread: CLI11 takes one-letter
// short names only, so `-ngl 99` would parse as `-n gl` and `-np 4` as `-n p`.
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/messages.h"

#ifndef BATON_VERSION
#define BATON_VERSION "unknown"
#endif

namespace baton::tools {

// "engine-worker 0.1.0 (wire protocol 4)"
inline std::string version_line(std::string_view tool) {
  return fmt::format("{} {} (wire protocol {})", tool, BATON_VERSION, net::kProtocolVersion);
}

inline void add_version_flag(CLI::App& app, std::string_view tool) {
  app.set_version_flag("--version", version_line(tool), "print the version and the wire protocol version, then exit");
}

// llama.cpp's multi-letter single-dash names this tool accepts, each renamed to a long option it
// defines ({"-np", "--parallel"}), and whether the GPU-offload flags are accepted and ignored.
struct LlamaHabits {
  std::vector<std::pair<std::string, std::string>> renames{};
  bool ignore_gpu_layers = true;
};

// True for the GPU-offload flag spellings of llama.cpp (-ngl N, --n-gpu-layers N, --gpu-layers N).
inline bool is_gpu_layers_flag(std::string_view a) {
  return a == "-ngl" || a == "--n-gpu-layers" || a == "--gpu-layers";
}

// argv[1..] with the renames applied and the GPU-offload flags and their values removed, a note
// on stderr for each; `--name=value` and `-np=4` forms are handled too.
inline std::vector<std::string> llama_habit_args(int argc, char** argv, std::string_view tool,
                                                 const LlamaHabits& habits) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const auto eq = a.find('=');
    const std::string name = a.substr(0, eq);
    if (habits.ignore_gpu_layers && is_gpu_layers_flag(name)) {
      std::string value = eq == std::string::npos ? "" : a.substr(eq + 1);
      // The value is the next word unless that is another option ("-1" and "0,99" are values).
      if (eq == std::string::npos && i + 1 < argc) {
        const std::string_view next = argv[i + 1];
        const bool option = next.size() > 1 && next[0] == '-' && !(next[1] >= '0' && next[1] <= '9');
        if (!option) value = argv[++i];
      }
      fmt::print(stderr, "{}: note: {}{}{} ignored: Baton runs every layer on the CPU (no GPU offload)\n", tool, name,
                 value.empty() ? "" : " ", value);
      continue;
    }
    for (const auto& [from, to] : habits.renames)
      if (name == from) a = eq == std::string::npos ? to : to + a.substr(eq);
    out.push_back(std::move(a));
  }
  return out;
}

// Parses argv with `--version` and the habits; nullopt to go on, or the exit code after CLI11
// printed the help, the version or the error.
inline std::optional<int> parse_tool_command_line(CLI::App& app, int argc, char** argv, std::string_view tool,
                                                  const LlamaHabits& habits = {}) {
  add_version_flag(app, tool);
  auto args = llama_habit_args(argc, argv, tool, habits);
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  try {
    app.parse(std::move(args));
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return std::nullopt;
}

}  // namespace baton::tools
