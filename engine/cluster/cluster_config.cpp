#include "engine/cluster/cluster_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/base/error.h"
#include "engine/cluster/config_limits.h"
#include "engine/cluster/etcd_url.h"

namespace baton {
namespace {

namespace fs = std::filesystem;

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail_at(const YAML::Node& node, const std::string& what) const {
    int line = node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
    fail("{}:{}: {}", source_, line, what);
  }

  template <class T>
  T scalar(const YAML::Node& node, const std::string& field, const char* expected) const {
    if (!node.IsScalar()) fail_at(node, fmt::format("{} must be {}", field, expected));
    try {
      return node.as<T>();
    } catch (const YAML::Exception&) {
      fail_at(node, fmt::format("{} must be {}, found '{}'", field, expected, node.Scalar()));
    }
  }

  uint16_t port(const YAML::Node& node, const std::string& field) const {
    auto v = scalar<int64_t>(node, field, "a port number (1-65535)");
    if (v < 1 || v > 65535) fail_at(node, fmt::format("{} must be a port number (1-65535), found {}", field, v));
    return static_cast<uint16_t>(v);
  }

  void only_keys(const YAML::Node& map, const std::string& where, std::initializer_list<const char*> allowed) const {
    for (const auto& kv : map) {
      auto key = kv.first.Scalar();
      if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; }))
        fail_at(kv.first, fmt::format("unknown field '{}' in {} (known: {})", key, where, fmt::join(allowed, ", ")));
    }
  }

  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

std::string resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(base_dir) / path).lexically_normal().string();
}

NodeConfig parse_node(const Reader& r, const YAML::Node& n, size_t index) {
  const std::string where = fmt::format("cluster.nodes[{}]", index);
  if (!n.IsMap()) r.fail_at(n, where + " must be a mapping {id, host, port, layers, weight}");
  r.only_keys(n, where, {"id", "host", "port", "layers", "weight"});
  NodeConfig node;
  node.line = n.Mark().line + 1;
  for (const char* required : {"id", "host", "port"})
    if (!n[required]) r.fail_at(n, fmt::format("{}.{} is missing", where, required));
  node.id = r.scalar<std::string>(n["id"], where + ".id", "a string");
  if (auto problem = name_problem(where + ".id", node.id, kMaxNodeIdBytes); !problem.empty())
    r.fail_at(n["id"], problem);
  node.host = r.scalar<std::string>(n["host"], where + ".host", "a host name or address");
  if (auto problem = name_problem(where + ".host", node.host, kMaxHostBytes); !problem.empty())
    r.fail_at(n["host"], problem);
  node.port = r.port(n["port"], where + ".port");
  if (n["weight"]) {
    node.weight = r.scalar<double>(n["weight"], where + ".weight", "a positive number");
    if (!(node.weight > 0) || !std::isfinite(node.weight))
      r.fail_at(n["weight"], fmt::format("{}.weight must be a positive number, found {}", where, node.weight));
  }
  const YAML::Node layers = n["layers"];
  if (!layers || (layers.IsScalar() && layers.Scalar() == "auto")) return node;
  if (!layers.IsSequence() || layers.size() != 2)
    r.fail_at(layers, where + ".layers must be [first, last] (inclusive) or auto");
  int64_t first = r.scalar<int64_t>(layers[0], where + ".layers[0]", "a layer index");
  int64_t last = r.scalar<int64_t>(layers[1], where + ".layers[1]", "a layer index");
  if (first < 0 || last < first)
    r.fail_at(layers, fmt::format("{}.layers [{}, {}] must satisfy 0 <= first <= last", where, first, last));
  node.layers = LayerSpan::from_inclusive(first, last);
  return node;
}

}  // namespace

ClusterConfig parse_cluster_config(const std::string& text, const std::string& source, const std::string& base_dir) {
  Reader r(source);
  if (text.size() > kMaxClusterConfigBytes)
    fail("{}: the file is {} bytes, more than the {} a cluster config may have", source, text.size(),
         kMaxClusterConfigBytes);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    fail("{}:{}: invalid YAML: {}", source, e.mark.line + 1, e.msg);
  }
  if (!root.IsMap()) fail("{}: the top level must be a mapping with 'model' and 'cluster'", source);
  r.only_keys(root, "the top level", {"model", "cluster"});
  ClusterConfig c;
  c.source = source;
  if (!root["model"]) fail("{}: 'model' (the coordinator's GGUF file) is missing", source);
  c.model = resolve(base_dir, r.scalar<std::string>(root["model"], "model", "a file path"));
  const YAML::Node cl = root["cluster"];
  if (!cl) fail("{}: 'cluster' is missing", source);
  if (!cl.IsMap()) r.fail_at(cl, "cluster must be a mapping");
  r.only_keys(cl, "cluster",
              {"master", "secret_file", "insecure", "nodes", "connect_timeout", "load_timeout", "registry",
               "activations", "min_nodes", "join_timeout", "heartbeat_timeout", "registry_file"});
  if (const YAML::Node m = cl["master"]) {
    if (!m.IsMap()) r.fail_at(m, "cluster.master must be a mapping {host, port, control_port}");
    r.only_keys(m, "cluster.master", {"host", "port", "control_port"});
    if (m["host"]) {
      c.master_host = r.scalar<std::string>(m["host"], "cluster.master.host", "a host");
      if (auto problem = name_problem("cluster.master.host", c.master_host, kMaxHostBytes); !problem.empty())
        r.fail_at(m["host"], problem);
    }
    if (m["port"]) c.master_port = r.port(m["port"], "cluster.master.port");
    if (m["control_port"]) c.control_port = r.port(m["control_port"], "cluster.master.control_port");
  }
  if (cl["secret_file"])
    c.secret_file = resolve(base_dir, r.scalar<std::string>(cl["secret_file"], "cluster.secret_file", "a file path"));
  if (cl["insecure"]) c.insecure = r.scalar<bool>(cl["insecure"], "cluster.insecure", "true or false");
  if (c.secret_file.empty() && !c.insecure)
    fail("{}: cluster.secret_file is missing; set it, or `insecure: true` to run without authentication", source);
  if (!c.secret_file.empty() && c.insecure)
    fail("{}: cluster.secret_file and `insecure: true` contradict each other", source);
  // Every duration within a sane range (config_limits.h): 1e300 s overflowed the clocks, 0 or
  // 1e-300 s failed every load, .nan and .inf passed.
  auto seconds = [&](const char* key, double& out, SecondsRange range) {
    if (!cl[key]) return;
    const std::string field = fmt::format("cluster.{}", key);
    out = r.scalar<double>(cl[key], field, "a number of seconds");
    if (auto problem = seconds_problem(field, out, range); !problem.empty()) r.fail_at(cl[key], problem);
  };
  seconds("connect_timeout", c.connect_timeout_s, kConnectTimeoutRange);
  seconds("load_timeout", c.load_timeout_s, kLoadTimeoutRange);
  if (cl["registry"]) c.registry = r.scalar<std::string>(cl["registry"], "cluster.registry", "etcd://host:port/prefix");
  if (cl["activations"]) {
    c.activations = r.scalar<std::string>(cl["activations"], "cluster.activations", "f32, f16 or bf16");
    if (c.activations != "f32" && c.activations != "f16" && c.activations != "bf16")
      r.fail_at(cl["activations"],
                fmt::format("cluster.activations must be f32, f16 or bf16, found '{}'", c.activations));
  }
  if (cl["min_nodes"]) {
    c.min_nodes = r.scalar<int>(cl["min_nodes"], "cluster.min_nodes", "a positive number of nodes");
    if (c.min_nodes < 1)
      r.fail_at(cl["min_nodes"], fmt::format("cluster.min_nodes must be >= 1, found {}", c.min_nodes));
  }
  seconds("join_timeout", c.join_timeout_s, kJoinTimeoutRange);
  seconds("heartbeat_timeout", c.heartbeat_timeout_s, kHeartbeatTimeoutRange);
  if (cl["registry_file"])
    c.registry_file =
        resolve(base_dir, r.scalar<std::string>(cl["registry_file"], "cluster.registry_file", "a file path"));
  if (!c.registry.empty()) {
    try {
      registry::parse_etcd_url(c.registry);  // the registry's own parser: the same rules
    } catch (const Error& e) {
      r.fail_at(cl["registry"], fmt::format("cluster.registry: {}", e.what()));
    }
  }
  if (c.control_port == 0) c.control_port = static_cast<uint16_t>(c.master_port == 65535 ? 0 : c.master_port + 1);

  const YAML::Node nodes = cl["nodes"];
  if (!nodes) fail("{}: cluster.nodes is missing (a list of nodes, or `auto`)", source);
  if (nodes.IsScalar() && nodes.Scalar() == "auto") {
    c.nodes_auto = true;
  } else {
    if (!nodes.IsSequence()) r.fail_at(nodes, "cluster.nodes must be a list of nodes or `auto`");
    if (nodes.size() > kMaxClusterNodes)
      r.fail_at(nodes,
                fmt::format("cluster.nodes lists {} nodes, more than the {} allowed", nodes.size(), kMaxClusterNodes));
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].IsScalar() && nodes[i].Scalar() == "auto") {  // mixed: the listed nodes + those that join
        if (c.nodes_auto) r.fail_at(nodes[i], "cluster.nodes lists `auto` twice");
        c.nodes_auto = true;
        continue;
      }
      c.nodes.push_back(parse_node(r, nodes[i], i));
    }
    if (c.nodes.empty())
      r.fail_at(nodes,
                c.nodes_auto ? "cluster.nodes lists only `auto`: write `nodes: auto`" : "cluster.nodes is empty");
  }
  // The registry only finds nodes that join; with a fixed list it would be silently ignored
  // (issue 29): the operator thinks the workers register there while nothing reads it.
  if (!c.registry.empty() && !c.nodes_auto)
    r.fail_at(cl["registry"],
              "cluster.registry is only used to find workers that join (`nodes: auto`, or an `auto` "
              "entry in cluster.nodes); with this fixed node list it would be ignored: remove it or add "
              "`auto` to cluster.nodes");
  std::map<std::string, int> ids, addresses;
  for (const auto& n : c.nodes) {
    if (auto [it, fresh] = ids.emplace(n.id, n.line); !fresh)
      fail("{}:{}: node id '{}' is used twice (also on line {})", source, n.line, n.id, it->second);
    auto address = fmt::format("{}:{}", n.host, n.port);
    if (auto [it, fresh] = addresses.emplace(address, n.line); !fresh)
      fail("{}:{}: node '{}' has address {}, already used on line {}", source, n.line, n.id, address, it->second);
  }
  return c;
}

ClusterConfig parse_cluster_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read cluster config {}", path);
  std::error_code ec;
  if (auto size = fs::file_size(path, ec); !ec && size > kMaxClusterConfigBytes)  // before reading it
    fail("{}: the file is {} bytes, more than the {} a cluster config may have", path, size, kMaxClusterConfigBytes);
  std::stringstream text;
  text << in.rdbuf();
  ClusterConfig c = parse_cluster_config(text.str(), path, fs::path(path).parent_path().string());
  if (c.nodes_auto && c.registry_file.empty()) c.registry_file = path + ".nodes.json";
  return c;
}

}  // namespace baton
