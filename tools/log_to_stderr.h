// Every tool logs to stderr; stdout carries only data (JSON, tables, completions, the
// "listening on" line), so a tool's output can be piped and parsed.
#pragma once

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace baton::tools {

// Idempotent: a second call keeps the logger the first made.
inline void log_to_stderr(const char* name) {
  auto logger = spdlog::get(name);
  spdlog::set_default_logger(logger ? logger : spdlog::stderr_color_mt(name));
}

}  // namespace baton::tools
