// One logging setup for every tool (docs/OPERATIONS.md): lines go to stderr always (stdout
// carries only data) and to --log-file when asked; UTC timestamps with the zone shown; the tool
// and node id in every line, so one place (journald, rsyslog, a shared file) can hold a whole
// cluster's log; plain text or one JSON object per line.
// Level: --log-level wins, then SPDLOG_LEVEL (spdlog's syntax: "debug" or "engine-worker=debug"),
// then the tool's default.
#pragma once

#include <spdlog/common.h>
#include <spdlog/formatter.h>

#include <memory>
#include <string>
#include <string_view>

namespace baton {

struct LogSettings {
  std::string level{};         // trace, debug, info, warn, error, critical, off ("" = not given)
  std::string format{"text"};  // text | json
  std::string file{};          // also append the lines here ("" = stderr only)
  std::string node{};          // node id shown in every line ("" = the tool name alone)
};

// The level of a name (as --log-level takes it; "warning" too); throws baton::Error listing
// the accepted names otherwise.
spdlog::level::level_enum parse_log_level(std::string_view name);

// A formatter writing one JSON object per line:
// {"time":"2026-12-02T09:35:40.123Z","level":"info","tool":"engine-worker","node":"node-01","msg":"..."}
// ("node" only when known). The message is escaped (invalid UTF-8 bytes become U+FFFD).
std::unique_ptr<spdlog::formatter> make_json_log_formatter(std::string tool, std::string node);

// The text pattern: "2026-12-02T09:35:40.123+00:00 [engine-worker node-01] [info] message".
std::unique_ptr<spdlog::formatter> make_text_log_formatter(const std::string& tool, const std::string& node);

// Makes the default logger named `tool`: stderr (+ file), the format and level of `settings`.
// `default_level` applies when neither --log-level nor SPDLOG_LEVEL says otherwise. Callable
// again (a tool sets up stderr logging before parsing its flags, then again with them).
// Throws baton::Error for a bad level or format, or a file that cannot be opened.
void configure_logging(const std::string& tool, const LogSettings& settings,
                       spdlog::level::level_enum default_level = spdlog::level::info);

}  // namespace baton
