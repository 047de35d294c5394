#include "engine/api/cors.h"

#include <algorithm>
#include <cctype>

#include "engine/api/http_server_impl.h"
#include "engine/base/error.h"

namespace baton::api {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// scheme "://" host [":" port], nothing after (an origin has no path, query or user info).
bool is_origin(std::string_view o) {
  const auto sep = o.find("://");
  if (sep == std::string_view::npos || sep == 0) return false;
  for (char c : o.substr(0, sep))
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return false;
  std::string_view host = o.substr(sep + 3);
  if (host.empty()) return false;
  return std::all_of(host.begin(), host.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' || c == '[' || c == ']' ||
           c == '_';
  });
}

// A header field name (RFC 9110 token).
bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

}  // namespace

CorsPolicy::CorsPolicy(const std::vector<std::string>& entries) {
  for (const auto& entry : entries) {
    std::string_view rest = entry;
    for (;;) {
      const auto comma = rest.find(',');
      std::string_view item = trim_ows(rest.substr(0, comma));
      if (item == "*") {
        any_ = true;
      } else {
        if (item.ends_with('/')) item.remove_suffix(1);
        if (!is_origin(item))
          fail("--cors-origin '{}': '{}' is not an origin (scheme://host[:port], e.g. http://localhost:5173) or '*'",
               entry, item);
        origins_.push_back(lower(item));
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
}

std::optional<std::string> CorsPolicy::allow_origin(std::string_view origin) const {
  if (any_) return std::string("*");
  if (origin.empty()) return std::nullopt;
  const std::string o = lower(origin);
  if (std::find(origins_.begin(), origins_.end(), o) != origins_.end()) return std::string(origin);
  return std::nullopt;
}

std::string CorsPolicy::allow_headers(std::string_view requested) {
  std::vector<std::string> names = {"authorization", "content-type"};
  std::string out = "Authorization, Content-Type";
  for (;;) {
    const auto comma = requested.find(',');
    const std::string name = lower(trim_ows(requested.substr(0, comma)));
    if (is_token(name) && std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(name);
      out += ", " + name;
    }
    if (comma == std::string_view::npos) break;
    requested.remove_prefix(comma + 1);
  }
  return out;
}

bool answer_cors(const CorsPolicy& cors, const httplib::Request& req, httplib::Response& res) {
  const std::optional<std::string> allowed = cors.allow_origin(req.get_header_value("Origin"));
  if (allowed) {
    res.set_header("Access-Control-Allow-Origin", *allowed);
    if (*allowed != "*") res.set_header("Vary", "Origin");
  }
  if (req.method != "OPTIONS") return false;
  // A preflight: 204 in every case; without the Access-Control-* headers the browser refuses.
  if (allowed) {
    res.set_header("Access-Control-Allow-Methods", CorsPolicy::kAllowMethods);
    res.set_header("Access-Control-Allow-Headers",
                   CorsPolicy::allow_headers(req.get_header_value("Access-Control-Request-Headers")));
    res.set_header("Access-Control-Max-Age", CorsPolicy::kMaxAgeSeconds);
  }
  res.set_header("Allow", CorsPolicy::kAllowMethods);
  res.status = 204;
  return true;
}

}  // namespace baton::api
