// etcd://HOST:PORT[/PREFIX] parsing and the prefix range end (no etcd needed).
#include <catch2/catch.hpp>

#include "engine/base/error.h"
#include "engine/registry/etcd_client.h"

using namespace baton::registry;

TEST_CASE("etcd URLs parse into host, port and a normalised prefix") {
  EtcdUrl u = parse_etcd_url("etcd://127.0.0.1:2379/baton");
  CHECK(u.host == "127.0.0.1");
  CHECK(u.port == 2379);
  CHECK(u.prefix == "/baton");
  CHECK(parse_etcd_url("etcd://etcd-1.example.com:12379").prefix == "/baton");
  CHECK(parse_etcd_url("etcd://h:1/").prefix == "/baton");
  CHECK(parse_etcd_url("etcd://h:1/team-a/cluster_2.x/").prefix == "/team-a/cluster_2.x");
  EtcdUrl v6 = parse_etcd_url("etcd://[::1]:2379/p");
  CHECK(v6.host == "::1");
  CHECK(v6.port == 2379);
  CHECK(EtcdClient(v6.host, v6.port).base_url() == "http://[::1]:2379");
}

TEST_CASE("malformed etcd URLs are errors that say what is wrong") {
  auto err = [](const std::string& url, const std::string& needle) {
    INFO(url);
    CHECK_THROWS_AS(parse_etcd_url(url), baton::Error);
    CHECK_THROWS_WITH(parse_etcd_url(url), Catch::Contains("'" + url + "'") && Catch::Contains(needle) &&
                                               Catch::Contains("etcd://HOST:PORT[/PREFIX]"));
  };
  err("http://127.0.0.1:2379", "scheme");
  err("127.0.0.1:2379", "scheme");
  err("etcd://:2379/x", "host is empty");
  err("etcd://localhost/x", "no :PORT");
  err("etcd://localhost:/x", "port '' is not a number");
  err("etcd://localhost:ab/x", "port 'ab'");
  err("etcd://localhost:0/x", "outside 1..65535");
  err("etcd://localhost:70000", "outside 1..65535");
  err("etcd://local_host:2379", "host 'local_host'");
  err("etcd://[::1/x", "closing ']'");
  err("etcd://user:pw@h:2379/x", "passwords");
  err("etcd://h:2379/a//b", "empty path segment");
  err("etcd://h:2379/a b", "character");
  err("etcd://h:2379/a?x=1", "query");
}

TEST_CASE("etcd prefix range end is the next key after every prefixed key") {
  CHECK(etcd_prefix_end("/baton/nodes/") == "/baton/nodes0");
  CHECK(etcd_prefix_end("a\xff") == "b");
  CHECK(etcd_prefix_end("\xff\xff") == std::string(1, '\0'));
}
