#include "engine/cluster/etcd_url.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "engine/base/error.h"

namespace baton::registry {

EtcdUrl parse_etcd_url(std::string_view url) {
  auto bad = [&](std::string_view what) {
    fail(
        "registry URL '{}': {} (expected etcd://HOST:PORT[/PREFIX], e.g. "
        "etcd://127.0.0.1:2379/baton)",
        url, what);
  };
  constexpr std::string_view kScheme = "etcd://";
  if (url.substr(0, kScheme.size()) != kScheme) bad("the scheme must be etcd://");
  std::string_view rest = url.substr(kScheme.size());
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) bad("user names and passwords are not supported");
  EtcdUrl out;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) bad("the IPv6 address has no closing ']'");
    out.host = std::string(authority.substr(1, close - 1));
    if (authority.substr(close + 1, 1) != ":") bad("no :PORT after the host");
    port_text = authority.substr(close + 2);
  } else {
    size_t colon = authority.rfind(':');
    if (colon == std::string_view::npos) bad("no :PORT after the host");
    out.host = std::string(authority.substr(0, colon));
    port_text = authority.substr(colon + 1);
    for (char c : out.host)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-')
        bad(fmt::format("the host '{}' has a character that is not a letter, digit, '.' or '-'", out.host));
  }
  if (out.host.empty()) bad("the host is empty");
  if (port_text.empty() || port_text.size() > 5 || !std::all_of(port_text.begin(), port_text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      }))
    bad(fmt::format("the port '{}' is not a number", port_text));
  int port = std::stoi(std::string(port_text));
  if (port < 1 || port > 65535) bad(fmt::format("the port {} is outside 1..65535", port));
  out.port = static_cast<uint16_t>(port);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.empty()) {
    out.prefix = "/baton";
    return out;
  }
  if (path.find_first_of("?#") != std::string_view::npos) bad("query strings and fragments are not supported");
  if (path.find("//") != std::string_view::npos) bad("the prefix has an empty path segment");
  if ((std::string(path) + "/").find("/./") != std::string::npos ||
      (std::string(path) + "/").find("/../") != std::string::npos)
    bad("the prefix has a '.' or '..' path segment");
  for (char c : path)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '/' && c != '.' && c != '_' && c != '-')
      bad(fmt::format("the prefix '{}' has a character other than [A-Za-z0-9._-/]", path));
  out.prefix = std::string(path);
  return out;
}

}  // namespace baton::registry
