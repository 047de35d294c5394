// engine-ctl doctor: every check prints "ok", "FAIL" or "note" and a reason; any FAIL -> exit 1.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include <fmt/core.h>

#include "commands.h"
#include "engine/cluster/cluster_config.h"
#include "engine/cluster/planner.h"
#include "engine/cluster/node_probe.h"
#include "engine/pipeline/connect_failure.h"
#include "gguf/gguf_file.h"
#include "gguf/model_identity.h"
#include "net/auth.h"
#include "net/inbox.h"
#include "net/node.h"

namespace baton::ctl {

namespace {

// TCP connect to host:port within `timeout` (like `nc -zv`): "" when it connected, else why not.
std::string probe_tcp(const std::string& host, uint16_t port, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0)
    return fmt::format("cannot resolve {}: {}", host, gai_strerror(rc));
  std::string why = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    int rc = connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = poll(&p, 1, static_cast<int>(timeout.count()));
      if (rc == 0) {
        why = fmt::format("no answer within {} ms", timeout.count());
        close(fd);
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc == 0) {
      close(fd);
      freeaddrinfo(res);
      return "";
    }
    why = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(res);
  return why;
}

bool is_local(const std::string& host) { return host == "127.0.0.1" || host == "localhost" || host == "::1"; }

struct Report {
  int failures = 0;
  void ok(const std::string& what) { fmt::print("ok    {}\n", what); }
  void note(const std::string& what) { fmt::print("note  {}\n", what); }
  void fail(const std::string& what) {
    fmt::print("FAIL  {}\n", what);
    ++failures;
  }
};

// The coordinator's handshake with node `n` (protocol version, secret, node id), then its status
// (model identity, servable layers, memory) by a status query; it sends no Prepare, so the node
// keeps whatever it serves. Every finding is one line of `r`.
void check_handshake(const ClusterConfig& config, const NodeConfig& n, const std::string& identity,
                     std::chrono::milliseconds timeout, Report& r) {
  net::NodeOptions no;
  no.node_id = "engine-ctl-doctor";
  no.role = net::Role::kClient;
  try {
    no.auth = config.insecure ? net::AuthConfig::insecure()
                              : net::AuthConfig::with_secret(net::load_secret_file(config.secret_file));
  } catch (const std::exception&) {
    return;  // the secret file check above failed already
  }
  no.handshake_timeout = timeout;
  net::Inbox inbox;
  net::Node node(std::move(no), inbox.handler());
  const std::string who = fmt::format("node {} ({}:{})", n.id, n.host, n.port);
  net::ConnectionPtr c;
  try {
    net::ConnectOptions co;
    co.deadline = timeout;
    c = node.connect(n.host, n.port, co);
  } catch (const std::exception& e) {
    r.fail(pipeline::describe_connect_failure(who, static_cast<double>(timeout.count()) / 1000.0, e));
    return;
  }
  const auto& hello = c->peer().hello;
  if (hello.node_id != n.id) {
    r.fail(fmt::format("{} answered as node '{}', the config says '{}'", who, hello.node_id, n.id));
    return;
  }
  r.ok(fmt::format("{}: handshake ok (protocol {}, {})", who, hello.protocol_version,
                   config.insecure ? "insecure" : "cluster secret accepted"));
  c->send(net::Heartbeat{});  // a status query
  std::optional<net::NodeStatus> status;
  std::string refused;  // the worker's ErrorReport (e.g. its model file does not open)
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!status && refused.empty() && std::chrono::steady_clock::now() < end) {
    auto in = inbox.pop(std::chrono::milliseconds(50));
    if (!in) continue;
    if (const auto* h = std::get_if<net::Heartbeat>(&in->message)) status = h->status;
    if (const auto* e = std::get_if<net::ErrorReport>(&in->message)) refused = e->message;
  }
  c->send(net::Goodbye{"engine-ctl doctor done"});
  if (!refused.empty()) {
    r.fail(fmt::format("{} cannot serve: {}", who, refused));
    return;
  }
  if (!status) {
    r.note(fmt::format("{} did not report its model and memory within {} ms (a worker older than the status query)",
                       who, timeout.count()));
    return;
  }
  if (!identity.empty() && status->model_identity != identity)
    r.fail(fmt::format("{} has model identity {}, the coordinator's model has {}: a different GGUF file", who,
                       status->model_identity, identity));
  else if (!identity.empty()) r.ok(fmt::format("{}: same model (identity {})", who, identity));
  // The planner's own rule for what a node can serve (planner.h: serves).
  if (n.layers && !serves(*status, *n.layers))
    r.fail(fmt::format("{} is given layers {} but its file holds {}", who, to_string(*n.layers),
                       status->layers.empty() ? std::string("no layers")
                                              : fmt::format("layers {}", to_string(served_layers(*status)))));
  r.ok(fmt::format("{}: {} of {} memory available, {} threads, {}", who, format_bytes(status->memory_free),
                   format_bytes(status->memory_total), status->threads, status->isa));
}

}  // namespace

int run_doctor(const DoctorArgs& args) {
  Report r;
  ClusterConfig config;
  try {
    config = parse_cluster_config_file(args.config);
    r.ok(fmt::format("{}: valid cluster config ({})", args.config,
                     config.nodes_auto ? "nodes: auto" : fmt::format("{} nodes", config.nodes.size())));
  } catch (const std::exception& e) {
    r.fail(e.what());
    fmt::print("1 check failed\n");
    return 1;
  }
  if (!config.insecure) {
    try {
      net::load_secret_file(config.secret_file);
      r.ok(fmt::format("secret file {} readable", config.secret_file));
    } catch (const std::exception& e) {
      r.fail(e.what());
    }
  }
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(args.timeout_s * 1000));
  std::shared_ptr<const gguf::GgufFile> file;
  std::string identity;
  try {
    file = gguf::GgufFile::open(config.model);
    identity = gguf::model_identity(*file);
  } catch (const std::exception& e) {
    r.fail(fmt::format("model {}: {}", config.model, e.what()));
  }
  for (const auto& n : config.nodes) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string why = probe_tcp(n.host, n.port, timeout);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (why.empty()) {
      r.ok(fmt::format("node {} {}:{}: port open ({:.1f} ms)", n.id, n.host, n.port, ms));
      check_handshake(config, n, identity, timeout, r);
    } else {
      r.fail(fmt::format("node {} {}:{}: port not reachable: {}", n.id, n.host, n.port, why));
    }
  }
  if (file) {
    const auto fp = ModelFootprint::from_file(*file, args.n_ctx, args.slots);
    uint64_t weights = 0;
    for (auto b : fp.layer_bytes) weights += b;
    r.ok(fmt::format("model {}: {} layers, {} of layer weights, KV cache {} per layer (n_ctx {} x {} slots)",
                     config.model, fp.n_layer, format_bytes(weights), format_bytes(fp.kv_bytes_per_layer), fp.n_ctx,
                     fp.max_sequences));
    if (config.nodes_auto) {
      r.note(
          fmt::format("nodes: auto: workers join {}:{} and are planned by memory and speed; the whole model needs "
                      "{} on the workers together",
                      config.master_host, config.control_port, format_bytes(range_bytes(fp, {}, {0, fp.n_layer}))));
    } else {
      try {
        const auto plan = plan_layers(config, fp.n_layer);
        r.ok(fmt::format("layers 0-{} covered exactly once by {} node(s)", fp.n_layer - 1, plan.size()));
        uint64_t local_need = 0;
        std::vector<std::string> local_ids;
        for (const auto& p : plan) {
          const uint64_t need = range_bytes(fp, {}, p.layers);
          r.note(fmt::format("node {} layers {} needs {} (weights + KV + headroom)", p.node_id, to_string(p.layers),
                             format_bytes(need)));
          if (is_local(p.host)) local_need += need, local_ids.push_back(p.node_id);
        }
        if (!local_ids.empty()) {
          const auto mem = registry::read_meminfo();
          const std::string what = fmt::format("this machine ({} local node(s)) needs {}, {} available",
                                               local_ids.size(), format_bytes(local_need), format_bytes(mem.available));
          if (local_need <= mem.available) r.ok("memory fit: " + what);
          else r.fail(fmt::format("memory fit: {}: {} missing", what, format_bytes(local_need - mem.available)));
        }
        if (local_ids.size() < plan.size())
          r.note("memory of remote nodes is not checked here: their workers report it when they --join");
      } catch (const std::exception& e) {
        r.fail(fmt::format("layer coverage: {}", e.what()));
      }
    }
  }
  if (r.failures == 0) {
    fmt::print("all checks passed\n");
    return 0;
  }
  fmt::print("{} check(s) failed\n", r.failures);
  return 1;
}

}  // namespace baton::ctl
