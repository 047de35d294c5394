// etcd v3 JSON gateway client: requests are JSON bodies POSTed to /v3/..., bytes fields are
// base64, int64 fields are decimal strings, zero-valued fields are omitted from replies, and
// streaming endpoints (keepalive, watch) wrap each message as {"result": ...} or {"error": ...}.
#include "engine/registry/etcd_client.h"

#include <fcntl.h>
#include <httplib.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "engine/base/error.h"

namespace baton::registry {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t n = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<uint8_t>(in[i + 1]) << 8;
    if (i + 2 < in.size()) n |= static_cast<uint8_t>(in[i + 2]);
    out += kBase64[(n >> 18) & 63];
    out += kBase64[(n >> 12) & 63];
    out += i + 1 < in.size() ? kBase64[(n >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kBase64[n & 63] : '=';
  }
  return out;
}

// Strict standard base64 (with padding), as etcd's gateway writes it; nullopt if malformed.
std::optional<std::string> base64_decode(std::string_view in) {
  static const std::array<int8_t, 256> table = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    for (int i = 0; i < 64; ++i) t[static_cast<uint8_t>(kBase64[i])] = static_cast<int8_t>(i);
    return t;
  }();
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    bool last = i + 4 == in.size();
    size_t pad = last ? (in[i + 3] == '=') + (in[i + 2] == '=') : 0;
    if (pad == 1 && in[i + 2] == '=') return std::nullopt;
    uint32_t n = 0;
    for (size_t k = 0; k < 4; ++k) {
      int v = k >= 4 - pad ? 0 : table[static_cast<uint8_t>(in[i + k])];
      if (v < 0) return std::nullopt;
      n = (n << 6) | static_cast<uint32_t>(v);
    }
    out += static_cast<char>((n >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((n >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(n & 0xff);
  }
  return out;
}

std::string snippet(std::string_view s) {
  std::string out(s.substr(0, 200));
  if (s.size() > 200) out += "...";
  return out;
}

std::string describe(httplib::Error error, std::chrono::milliseconds timeout) {
  switch (error) {
    case httplib::Error::Connection: return "cannot connect (is etcd running there?)";
    case httplib::Error::ConnectionTimeout: return fmt::format("no connection within {} ms", timeout.count());
    case httplib::Error::Read:
      return fmt::format("no complete reply (connection closed, or silent for {} ms)", timeout.count());
    case httplib::Error::Write: return "cannot send the request";
    default: return fmt::format("HTTP client error '{}'", httplib::to_string(error));
  }
}

void set_timeouts(httplib::Client& client, std::chrono::milliseconds connect, std::chrono::milliseconds read) {
  client.set_connection_timeout(connect);
  client.set_read_timeout(read);
  client.set_write_timeout(connect);
  client.set_keep_alive(false);
  // Close-on-exec, so that a worker spawning processes does not leak its etcd connections.
  client.set_socket_options([](socket_t fd) { ::fcntl(fd, F_SETFD, FD_CLOEXEC); });
}

// Where a failure happened: "etcd http://127.0.0.1:2379/v3/kv/put (put /baton/nodes/w1)".
struct Site {
  const std::string& base_url;
  std::string_view path;
  std::string_view operation;
};

template <class... Args>
[[noreturn]] void fail_at(const Site& site, fmt::format_string<Args...> format, Args&&... args) {
  fail("etcd {}{} ({}): {}", site.base_url, site.path, site.operation,
       fmt::format(format, std::forward<Args>(args)...));
}

// etcd's error body: {"error": "...", "message": "...", "code": N} from unary calls,
// {"error": {"grpc_code": N, "message": "..."}} from streaming ones. Empty if `reply` is none.
std::string etcd_error(const json& reply) {
  if (!reply.is_object() || !reply.contains("error")) return {};
  const json& e = reply["error"];
  const json& where = e.is_object() ? e : reply;
  std::string message =
      where.contains("message") && where["message"].is_string() ? where["message"].get<std::string>() : e.dump();
  for (const char* code_field : {"code", "grpc_code", "http_code"})
    if (where.contains(code_field)) return fmt::format("{} (code {})", message, where[code_field].dump());
  return message;
}

// The gRPC status code of etcd's error body ("code" from unary calls, "grpc_code" from
// streaming ones); -1 when it has none.
int etcd_grpc_code(const json& reply) {
  if (!reply.is_object() || !reply.contains("error")) return -1;
  const json& e = reply["error"];
  const json& where = e.is_object() ? e : reply;
  for (const char* code_field : {"code", "grpc_code"})
    if (where.contains(code_field) && where[code_field].is_number_integer()) return where[code_field].get<int>();
  return -1;
}

// An int64 field: a decimal string in the gateway's JSON, absent when zero.
int64_t int64_field(const json& object, const char* field, const Site& site) {
  auto it = object.find(field);
  if (it == object.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    size_t used = 0;
    try {
      int64_t v = std::stoll(s, &used);
      if (used == s.size()) return v;
    } catch (const std::exception&) {
    }
  }
  fail_at(site, "field '{}' is not an int64: {}", field, snippet(it->dump()));
}

std::string bytes_field(const json& object, const char* field, const Site& site) {
  auto it = object.find(field);
  if (it == object.end()) return {};
  std::optional<std::string> bytes;
  if (it->is_string()) bytes = base64_decode(it->get_ref<const std::string&>());
  if (!bytes) fail_at(site, "field '{}' is not base64: {}", field, snippet(it->dump()));
  return *bytes;
}

}  // namespace

std::string etcd_prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(end.back());
    if (last < 0xff) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key (etcd's convention for an all-0xff prefix)
}

EtcdClient::EtcdClient(std::string host, uint16_t port, Options options)
    : host_(std::move(host)), port_(port), options_(options) {
  bool ipv6 = host_.find(':') != std::string::npos;
  base_url_ = ipv6 ? fmt::format("http://[{}]:{}", host_, port_) : fmt::format("http://{}:{}", host_, port_);
}

namespace {

// POSTs one JSON request and returns the reply, unwrapped from {"result": ...}.
//
// The body is collected through a content receiver rather than read from the Response:
// etcd's gateway ends error replies with an HTTP trailer (Grpc-Trailer-Content-Type), which
// cpp-httplib 0.11 does not accept, so it reports a read error after the whole body arrived.
// A complete JSON body with a status line is therefore an answer even when the read "failed".
json post(const std::string& host, uint16_t port, const EtcdClient::Options& options, const Site& site,
          const json& request) {
  httplib::Client client(host, port);
  set_timeouts(client, options.timeout, options.timeout);
  httplib::Request req;
  req.method = "POST";
  req.path = std::string(site.path);
  req.body = request.dump();
  req.set_header("Content-Type", "application/json");
  int status = 0;
  std::string body;
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    body.append(data, size);
    return body.size() <= (64u << 20);  // a reply this large is not etcd's
  };
  httplib::Response res;
  httplib::Error http_error = httplib::Error::Success;
  bool completed = client.send(req, res, http_error);
  json reply = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!completed && (status == 0 || reply.is_discarded())) fail_at(site, "{}", describe(http_error, options.timeout));
  if (reply.is_discarded()) fail_at(site, "HTTP {}, reply is not JSON: '{}'", status, snippet(body));
  if (std::string error = etcd_error(reply); !error.empty())
    throw EtcdReplyError(
        fmt::format("etcd {}{} ({}): etcd says: {} [HTTP {}]", site.base_url, site.path, site.operation, error, status),
        etcd_grpc_code(reply));
  if (status != 200) fail_at(site, "HTTP {}: '{}'", status, snippet(body));
  if (reply.contains("result")) reply = reply["result"];
  if (!reply.is_object()) fail_at(site, "reply is not a JSON object: '{}'", snippet(body));
  return reply;
}

}  // namespace

int64_t EtcdClient::grant_lease(std::chrono::seconds ttl) const {
  std::string op = fmt::format("grant a {} s lease", ttl.count());
  Site site{base_url_, "/v3/lease/grant", op};
  json reply = post(host_, port_, options_, site, {{"TTL", std::to_string(ttl.count())}});
  int64_t id = int64_field(reply, "ID", site);
  if (id == 0) fail_at(site, "reply has no lease ID: '{}'", snippet(reply.dump()));
  return id;
}

int64_t EtcdClient::keep_alive_lease(int64_t lease) const {
  std::string op = fmt::format("keep lease {:x} alive", lease);
  Site site{base_url_, "/v3/lease/keepalive", op};
  json reply = post(host_, port_, options_, site, {{"ID", std::to_string(lease)}});
  return std::max<int64_t>(0, int64_field(reply, "TTL", site));  // absent (0): lease gone
}

bool EtcdClient::revoke_lease(int64_t lease) const {
  std::string op = fmt::format("revoke lease {:x}", lease);
  Site site{base_url_, "/v3/lease/revoke", op};
  try {
    post(host_, port_, options_, site, {{"ID", std::to_string(lease)}});
    return true;
  } catch (const EtcdReplyError& e) {
    if (e.grpc_code() == kEtcdNotFound) return false;  // etcdserver: requested lease not found
    throw;
  }
}

int64_t EtcdClient::put(std::string_view key, std::string_view value, int64_t lease) const {
  std::string op = fmt::format("put {}", key);
  Site site{base_url_, "/v3/kv/put", op};
  json request = {{"key", base64_encode(key)}, {"value", base64_encode(value)}};
  if (lease != 0) request["lease"] = std::to_string(lease);
  json reply = post(host_, port_, options_, site, request);
  return int64_field(reply.value("header", json::object()), "revision", site);
}

namespace {

EtcdRangeResult parse_range(const json& reply, const Site& site) {
  EtcdRangeResult out;
  out.revision = int64_field(reply.value("header", json::object()), "revision", site);
  if (!reply.contains("kvs")) return out;
  if (!reply["kvs"].is_array()) fail_at(site, "'kvs' is not an array");
  for (const json& kv : reply["kvs"]) {
    if (!kv.is_object()) fail_at(site, "an entry of 'kvs' is not an object");
    out.kvs.push_back({bytes_field(kv, "key", site), bytes_field(kv, "value", site),
                       int64_field(kv, "mod_revision", site), int64_field(kv, "lease", site)});
  }
  return out;
}

}  // namespace

EtcdRangeResult EtcdClient::range_prefix(std::string_view prefix) const {
  std::string op = fmt::format("list {}*", prefix);
  Site site{base_url_, "/v3/kv/range", op};
  json request = {{"key", base64_encode(prefix)}, {"range_end", base64_encode(etcd_prefix_end(prefix))}};
  return parse_range(post(host_, port_, options_, site, request), site);
}

EtcdRangeResult EtcdClient::range_key(std::string_view key) const {
  std::string op = fmt::format("get {}", key);
  Site site{base_url_, "/v3/kv/range", op};
  return parse_range(post(host_, port_, options_, site, {{"key", base64_encode(key)}}), site);
}

int64_t EtcdClient::delete_key(std::string_view key) const {
  std::string op = fmt::format("delete {}", key);
  Site site{base_url_, "/v3/kv/deleterange", op};
  json reply = post(host_, port_, options_, site, {{"key", base64_encode(key)}});
  return int64_field(reply, "deleted", site);
}

bool EtcdClient::watch_prefix(std::string_view prefix, int64_t start_revision, std::chrono::milliseconds wait) const {
  std::string op = fmt::format("watch {}* from revision {}", prefix, start_revision);
  Site site{base_url_, "/v3/watch", op};
  json request = {{"create_request",
                   {{"key", base64_encode(prefix)},
                    {"range_end", base64_encode(etcd_prefix_end(prefix))},
                    {"start_revision", std::to_string(start_revision)}}}};
  httplib::Client client(host_, port_);
  // The stream stays silent while nothing changes: the read timeout is the wait itself.
  set_timeouts(client, options_.timeout, std::max(wait, std::chrono::milliseconds(1)));

  // The gateway streams one JSON message per line.
  std::string buffer, error;
  bool created = false, changed = false;
  auto handle_line = [&](std::string_view line) {
    if (line.find_first_not_of(" \r\t") == std::string_view::npos) return;
    json message = json::parse(line.begin(), line.end(), nullptr, false);
    if (message.is_discarded() || !message.is_object()) {
      error = fmt::format("stream message is not JSON: '{}'", snippet(line));
    } else if (std::string e = etcd_error(message); !e.empty()) {
      error = "etcd says: " + e;
    } else {
      const json& result = message.contains("result") ? message["result"] : message;
      created = created || result.value("created", false);
      bool compacted = int64_field(result, "compact_revision", site) != 0;
      bool has_events = result.contains("events") && !result["events"].empty();
      changed = changed || compacted || has_events;
      if (!changed && result.value("canceled", false))
        error = "watch canceled: " + result.value("cancel_reason", std::string("no reason given"));
    }
  };
  httplib::Request req;
  req.method = "POST";
  req.path = "/v3/watch";
  req.body = request.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    buffer.append(data, size);
    for (size_t nl; (nl = buffer.find('\n')) != std::string::npos;) {
      handle_line(std::string_view(buffer).substr(0, nl));
      buffer.erase(0, nl + 1);
      if (changed || !error.empty()) return false;  // stop reading: we have our answer
    }
    return true;
  };
  httplib::Response res;
  httplib::Error http_error = httplib::Error::Success;
  Clock::time_point start = Clock::now();
  bool completed = client.send(req, res, http_error);
  if (completed && !changed && error.empty()) handle_line(buffer);  // last line, no newline
  if (!error.empty()) fail_at(site, "{}", error);
  if (changed) return true;
  if (completed) fail_at(site, "HTTP {}: the stream ended without an event", res.status);
  auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  if (http_error == httplib::Error::Read) {
    if (elapsed + std::chrono::milliseconds(5) >= wait) return false;  // quiet stream: timeout
    fail_at(site, "the stream broke after {} ms ({})", elapsed.count(),
            created ? "watch was created" : "before the watch was created");
  }
  fail_at(site, "{}", describe(http_error, options_.timeout));
}

}  // namespace baton::registry
