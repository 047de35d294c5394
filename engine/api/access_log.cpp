#include "engine/api/access_log.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <chrono>
#include <random>

namespace baton::api {

namespace {

using AccessClock = std::chrono::steady_clock;

struct AccessRecord {
  bool active = false;
  std::string id;
  AccessClock::time_point start{};
  long long prompt_tokens = -1;  // -1: not a generation (or it never got that far)
  long long generated_tokens = -1;
  int error_status = 0;
};

thread_local AccessRecord access_record;

std::string fresh_request_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("req-{:012x}", rng() & 0xffffffffffffULL);
}

// A client's id is used only when it cannot break a log line or a header.
bool usable_request_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == ':')) return false;
  return true;
}

// The path as sent, made safe for one log line: no spaces or control bytes, at most 200 bytes.
std::string printable_path(const std::string& path) {
  std::string out;
  for (char c : path.substr(0, 200)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u <= 0x20 || u == 0x7f || c == '"') ? '?' : c;
  }
  if (path.size() > 200) out += "...";
  return out.empty() ? "-" : out;
}

bool polled_route(const std::string& method, const std::string& path) {
  if (method != "GET") return false;
  return path == "/health" || path == "/metrics" || path == "/v1/cluster" || path == "/v1/dashboard" || path == "/" ||
         path == "/dashboard" || path.starts_with("/webui/");
}

}  // namespace

void begin_access_record(const httplib::Request& req, httplib::Response& res) {
  access_record = AccessRecord{};
  access_record.active = true;
  access_record.start = AccessClock::now();
  const std::string given = req.get_header_value("X-Request-Id");
  access_record.id = usable_request_id(given) ? given : fresh_request_id();
  res.set_header("X-Request-Id", access_record.id);
}

std::string current_request_id() { return access_record.active ? access_record.id : "-"; }

void note_access_tokens(const serving::CompletionSummary& summary) {
  if (!access_record.active) return;
  access_record.prompt_tokens = static_cast<long long>(summary.prompt_tokens);
  access_record.generated_tokens = static_cast<long long>(summary.completion_tokens);
}

void note_access_failure(int status) {
  if (access_record.active) access_record.error_status = status;
}

void log_access(const httplib::Request& req, const httplib::Response& res) {
  // A request refused before routing (unparsable, too large) has no record: it gets an id here.
  const AccessRecord r = access_record.active ? access_record : AccessRecord{false, fresh_request_id(), {}, -1, -1, 0};
  access_record = AccessRecord{};
  std::string line = fmt::format("access id={} method={} path={} status={}", r.id, printable_path(req.method),
                                 printable_path(req.path), res.status);
  if (r.error_status && r.error_status != res.status) line += fmt::format(" error_status={}", r.error_status);
  if (r.prompt_tokens >= 0)
    line += fmt::format(" prompt_tokens={} generated_tokens={}", r.prompt_tokens, r.generated_tokens);
  if (r.active)
    line += fmt::format(" ms={:.1f}", std::chrono::duration<double, std::milli>(AccessClock::now() - r.start).count());
  line += fmt::format(" client={}", printable_path(req.remote_addr));
  const bool quiet = res.status < 400 && !r.error_status && polled_route(req.method, req.path);
  spdlog::log(quiet ? spdlog::level::debug : spdlog::level::info, "{}", line);
}

}  // namespace baton::api
