// The shared log setup (engine/base/log_setup.h): level names, the JSON line formatter (one
// parsable object per line whatever the message holds) and the text pattern's UTC time.
#include <catch2/catch.hpp>
#include <spdlog/details/log_msg.h>

#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/base/log_setup.h"

namespace {

std::string format_with(spdlog::formatter& f, const std::string& payload, spdlog::level::level_enum level) {
  spdlog::details::log_msg msg("engine-worker", level, spdlog::string_view_t(payload.data(), payload.size()));
  spdlog::memory_buf_t out;
  f.format(msg, out);
  return std::string(out.data(), out.size());
}

}  // namespace

TEST_CASE("log levels parse by name and a wrong one is named in the error", "[base][logs]") {
  CHECK(baton::parse_log_level("trace") == spdlog::level::trace);
  CHECK(baton::parse_log_level("warn") == spdlog::level::warn);
  CHECK(baton::parse_log_level("error") == spdlog::level::err);
  CHECK(baton::parse_log_level("off") == spdlog::level::off);
  CHECK_THROWS_WITH(baton::parse_log_level("loud"), Catch::Contains("'loud'") && Catch::Contains("critical"));
}

TEST_CASE("json log lines are one parsable object whatever the message holds", "[base][logs]") {
  auto f = baton::make_json_log_formatter("engine-worker", "node-01");
  const std::string nasty = "say \"hi\"\\ then\nnext line\ttab \x01 caf\xc3\xa9 bad\xff byte";
  const std::string line = format_with(*f, nasty, spdlog::level::warn);
  REQUIRE(line.back() == '\n');
  CHECK(line.find('\n') == line.size() - 1);  // exactly one line
  const auto j = nlohmann::json::parse(line);
  CHECK(j["level"] == "warning");
  CHECK(j["tool"] == "engine-worker");
  CHECK(j["node"] == "node-01");
  CHECK(j["msg"] == "say \"hi\"\\ then\nnext line\ttab \x01 caf\xc3\xa9 bad\xef\xbf\xbd byte");
  const std::string time = j["time"];
  CHECK(time.size() == 24);  // 2026-12-02T09:35:40.123Z
  CHECK(time[10] == 'T');
  CHECK(time.back() == 'Z');

  auto no_node = baton::make_json_log_formatter("engine-ctl", "");
  CHECK_FALSE(nlohmann::json::parse(format_with(*no_node, "x", spdlog::level::info)).contains("node"));
}

TEST_CASE("text log lines show UTC with its zone, the tool and the node id", "[base][logs]") {
  auto f = baton::make_text_log_formatter("engine-worker", "node-%1");
  const std::string line = format_with(*f, "hello", spdlog::level::info);
  INFO(line);
  CHECK(line.find("+00:00 [engine-worker node-%1] [info] hello\n") != std::string::npos);
  CHECK(line[10] == 'T');
}

TEST_CASE("configure_logging refuses an unknown format and a log file it cannot open", "[base][logs]") {
  baton::LogSettings s;
  s.format = "xml";
  CHECK_THROWS_WITH(baton::configure_logging("t", s), Catch::Contains("'xml'"));
  s.format = "text";
  s.file = "/dev/null/y.log";
  CHECK_THROWS_WITH(baton::configure_logging("t", s), Catch::Contains("/dev/null/y.log"));
}
