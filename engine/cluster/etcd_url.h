// The registry's address, etcd://HOST:PORT[/PREFIX]: parsed here, a floor below the etcd client
// (engine/registry/etcd_client.h), so the cluster config checks `registry:` with the same rules.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace baton::registry {

// etcd://HOST:PORT[/PREFIX]: where etcd listens and under which key prefix this cluster lives.
struct EtcdUrl {
  std::string host;    // a host name, an IPv4 address or an IPv6 address (written [::1] in the URL)
  uint16_t port = 0;   // 1..65535
  std::string prefix;  // "/baton" when the URL has none; always starts with '/', never ends with '/'
};

// Parses etcd://HOST:PORT[/PREFIX]. Throws baton::Error naming the URL and what is wrong
// (scheme, host, port, prefix). The prefix is made of path segments of [A-Za-z0-9._-].
EtcdUrl parse_etcd_url(std::string_view url);

}  // namespace baton::registry
