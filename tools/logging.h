// Every tool logs through one setup (engine/base/log_setup.h): stderr always, stdout carries
// only data (JSON, tables, completions, the "listening on" line), so a tool's output can be
// piped and parsed. The flags every tool takes: --log-level, --log-format, --log-file.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "engine/base/error.h"
#include "engine/base/log_setup.h"

namespace baton::tools {

// Before the flags are parsed: text on stderr at `default_level` (SPDLOG_LEVEL applies).
inline void log_to_stderr(const char* tool, spdlog::level::level_enum default_level = spdlog::level::info) {
  configure_logging(tool, LogSettings{}, default_level);
}

inline void add_log_options(CLI::App& app, LogSettings& settings) {
  app.add_option("--log-level", settings.level,
                 "trace, debug, info, warn, error, critical or off (default info; env SPDLOG_LEVEL too)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "warning", "error", "err", "critical", "off"}));
  app.add_option("--log-format", settings.format, "text, or json: one JSON object per line")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--log-file", settings.file, "append the log to this file too (stderr always has it)");
}

// For a tool whose commands parse their own flags (engine-gguf): removes --log-level,
// --log-format and --log-file (as "--flag VALUE" or "--flag=VALUE") from argv and returns them.
// Throws baton::Error for a flag without its value.
inline LogSettings take_log_options(int& argc, char** argv) {
  LogSettings settings;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string* target = nullptr;
    std::string value;
    bool matched = false;
    for (auto [flag, field] : {std::pair{"--log-level", &settings.level}, std::pair{"--log-format", &settings.format},
                               std::pair{"--log-file", &settings.file}}) {
      const std::string f = flag;
      if (arg == f) {
        if (i + 1 >= argc) fail("{} needs a value", f);
        target = field;
        value = argv[++i];
        matched = true;
      } else if (arg.starts_with(f + "=")) {
        target = field;
        value = arg.substr(f.size() + 1);
        matched = true;
      }
    }
    if (matched) {
      *target = value;
      continue;
    }
    argv[out++] = argv[i];
  }
  argc = out;
  argv[argc] = nullptr;
  return settings;
}

// After the flags are parsed. Throws baton::Error (a file that cannot be opened).
inline void apply_log_options(const char* tool, const LogSettings& settings,
                              spdlog::level::level_enum default_level = spdlog::level::info) {
  configure_logging(tool, settings, default_level);
}

}  // namespace baton::tools
