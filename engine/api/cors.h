// Cross-origin access for browser clients (CORS). The server answers no cross-origin request
// by default (same origin only: the page at `/` needs nothing); `--cors-origin` names the
// origins whose pages may call the API, or `*` for any. An allowed origin gets
// Access-Control-Allow-Origin on every response and its OPTIONS preflights answered with 204;
// preflights need no API key (browsers send none), the request that follows does.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace baton::api {

class CorsPolicy {
 public:
  CorsPolicy() = default;  // no origin allowed
  // Each entry is `*`, an origin (`https://app.example.com`, `http://localhost:5173`) or a comma
  // list of them. Throws baton::Error naming an entry that is not an origin (a path, no scheme).
  explicit CorsPolicy(const std::vector<std::string>& entries);

  bool enabled() const { return any_ || !origins_.empty(); }
  // The Access-Control-Allow-Origin value for a request from `origin` (its Origin header, "" when
  // absent), or nullopt when it gets none.
  std::optional<std::string> allow_origin(std::string_view origin) const;
  // Access-Control-Allow-Headers for a preflight asking for `requested` (its
  // Access-Control-Request-Headers): Authorization and Content-Type, plus what was asked for
  // (the SDKs add their own X-Stainless-* headers), names only.
  static std::string allow_headers(std::string_view requested);

  static constexpr const char* kAllowMethods = "GET, POST, OPTIONS";
  static constexpr const char* kMaxAgeSeconds = "600";

 private:
  bool any_ = false;
  std::vector<std::string> origins_;  // lower case, no trailing slash
};

}  // namespace baton::api
