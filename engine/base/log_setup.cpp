#include "engine/base/log_setup.h"

#include <spdlog/cfg/env.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <ctime>
#include <vector>

#include "engine/base/error.h"

namespace baton {

namespace {

// Length of the valid UTF-8 sequence at s[i], 0 when it is not one.
size_t log_utf8_sequence_length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  return n;
}

void append_log_text(spdlog::memory_buf_t& out, std::string_view s) { out.append(s.data(), s.data() + s.size()); }

void append_log_json_string(spdlog::memory_buf_t& out, std::string_view s) {
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", u);
    } else if (u >= 0x80) {
      const size_t n = log_utf8_sequence_length(s, i);
      if (n == 0) {
        fmt::format_to(std::back_inserter(out), "\\ufffd");
        ++i;
      } else {
        out.append(s.data() + i, s.data() + i + n);
        i += n;
      }
      continue;
    } else {
      out.push_back(c);
    }
    ++i;
  }
  out.push_back('"');
}

class JsonLogFormatter final : public spdlog::formatter {
 public:
  JsonLogFormatter(std::string tool, std::string node) : tool_(std::move(tool)), node_(std::move(node)) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto since_epoch = msg.time.time_since_epoch();
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch - seconds).count();
    const std::time_t t = seconds.count();
    std::tm tm{};
    gmtime_r(&t, &tm);
    fmt::format_to(std::back_inserter(dest),
                   "{{\"time\":\"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z\",\"level\":", tm.tm_year + 1900,
                   tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
    const auto level = spdlog::level::to_string_view(msg.level);
    append_log_json_string(dest, std::string_view(level.data(), level.size()));
    append_log_text(dest, std::string_view(",\"tool\":"));
    append_log_json_string(dest, tool_);
    if (!node_.empty()) {
      append_log_text(dest, std::string_view(",\"node\":"));
      append_log_json_string(dest, node_);
    }
    append_log_text(dest, std::string_view(",\"msg\":"));
    append_log_json_string(dest, std::string_view(msg.payload.data(), msg.payload.size()));
    append_log_text(dest, std::string_view("}\n"));
  }

  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonLogFormatter>(tool_, node_); }

 private:
  std::string tool_;
  std::string node_;
};

// '%' is the pattern's escape: a node id holding one is shown as written.
std::string log_pattern_literal(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '%') out += '%';
    out += c;
  }
  return out;
}

}  // namespace

spdlog::level::level_enum parse_log_level(std::string_view name) {
  static const std::pair<std::string_view, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},       {"info", spdlog::level::info},
      {"warn", spdlog::level::warn},   {"warning", spdlog::level::warn},      {"error", spdlog::level::err},
      {"err", spdlog::level::err},     {"critical", spdlog::level::critical}, {"off", spdlog::level::off}};
  for (const auto& [n, level] : kLevels)
    if (n == name) return level;
  fail("log level '{}' is not one of trace, debug, info, warn, error, critical, off", name);
}

std::unique_ptr<spdlog::formatter> make_json_log_formatter(std::string tool, std::string node) {
  return std::make_unique<JsonLogFormatter>(std::move(tool), std::move(node));
}

std::unique_ptr<spdlog::formatter> make_text_log_formatter(const std::string& tool, const std::string& node) {
  const std::string source = node.empty() ? tool : tool + " " + node;
  return std::make_unique<spdlog::pattern_formatter>(
      "%Y-%m-%dT%H:%M:%S.%e%z [" + log_pattern_literal(source) + "] [%^%l%$] %v", spdlog::pattern_time_type::utc);
}

void configure_logging(const std::string& tool, const LogSettings& settings, spdlog::level::level_enum default_level) {
  if (settings.format != "text" && settings.format != "json")
    fail("log format '{}' is not one of text, json", settings.format);
  const bool level_given = !settings.level.empty();
  const auto level = level_given ? parse_log_level(settings.level) : default_level;

  std::vector<spdlog::sink_ptr> sinks{std::make_shared<spdlog::sinks::stderr_color_sink_mt>()};
  if (!settings.file.empty()) {
    try {
      sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(settings.file, /*truncate=*/false));
    } catch (const spdlog::spdlog_ex& e) {
      fail("cannot open --log-file {}: {}", settings.file, e.what());
    }
  }
  auto logger = std::make_shared<spdlog::logger>(tool, sinks.begin(), sinks.end());
  if (settings.format == "json") logger->set_formatter(make_json_log_formatter(tool, settings.node));
  else logger->set_formatter(make_text_log_formatter(tool, settings.node));
  // Every line reaches the file at once: an operator tails it, a crash loses nothing.
  logger->flush_on(spdlog::level::trace);
  logger->set_level(default_level);
  spdlog::drop(tool);
  spdlog::set_default_logger(logger);  // registers it, so SPDLOG_LEVEL can name it
  spdlog::set_level(default_level);
  spdlog::cfg::load_env_levels();  // SPDLOG_LEVEL: "debug", or "engine-worker=debug,..."
  if (level_given) {
    spdlog::set_level(level);
    logger->set_level(level);
  }
}

}  // namespace baton
