// engine-worker: serves a layer range of a model to an engine-coordinator (see engine/pipeline/
// worker.h and docs/PROTOCOL.md).
//   engine-worker --host 127.0.0.1 --port 8010 --node-id node-01 --model FILE [--threads N]
//                 (--secret-file F | --insecure) [--pid-file F]
//                 [--join HOST:PORT | --registry etcd://HOST:PORT/PREFIX] [--heartbeat-ms N] [--advertise HOST]
//                 [--speed GFLOPS] [--max-memory MIB]
// --join registers with the coordinator's control port (docs/REGISTRY.md): node id, address,
// memory, threads, ISA, model identity, servable layers and a measured speed, then heartbeats;
// --registry announces the same record in etcd under a lease. SIGTERM deregisters first.
// Listening on 0.0.0.0 without --advertise, it announces its route's local address (advertise.h).
// Under systemd (Type=notify, scripts/deploy/systemd) READY=1 follows the "listening on" line.
// --max-memory caps the free memory announced (the planner never gives this node more).
// Prints one start line "engine-worker <id> listening on <host>:<port>" (port 0 -> the bound
// port). SIGTERM/SIGINT: clean shutdown, pid file removed, exit 0.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <tuple>

#include "advertise.h"
#include "engine/base/error.h"
#include "engine/cluster/node_probe.h"
#include "engine/cluster/node_readings.h"
#include "engine/pipeline/worker.h"
#include "engine/registry/etcd_registry.h"
#include "engine/registry/join_client.h"
#include "gguf/gguf_file.h"
#include "net/auth.h"
#include "tools/common_cli.h"
#include "tools/logging.h"
#include "tools/systemd_notify.h"

int main(int argc, char** argv) {
  baton::tools::log_to_stderr("engine-worker");
  CLI::App app{"Serve a range of a model's layers to an engine-coordinator"};
  baton::pipeline::WorkerOptions o;
  std::string secret_file, pid_file;
  bool insecure = false;
  o.port = 8010;
  app.add_option("--host", o.host, "listen address")->capture_default_str();
  app.add_option("--port", o.port, "listen port (0: any free port)")->capture_default_str();
  app.add_option("--node-id", o.node_id, "this node's id (as in the cluster YAML)")->required();
  app.add_option("-m,--model", o.model_path, "GGUF file: the full model, a split model or a shard")->required();
  app.add_option("-t,--threads", o.threads, "compute threads (default: all cores)");
  auto* sf = app.add_option("--secret-file", secret_file, "file holding the cluster secret");
  app.add_flag("--insecure", insecure, "no authentication (the coordinator must be insecure too)")->excludes(sf);
  bool mmap = false;
  app.add_flag("--mmap", mmap,
               "keep the weights in the file mapping (no copy, no repacked layout): pages can be evicted and re-read "
               "under memory pressure, decode is slower");
  app.add_option("--pid-file", pid_file, "write the process id here; removed on exit");
  std::string join, registry_url, advertise;
  int heartbeat_ms = 1000;
  double speed = 0;
  double max_memory_mib = 0;
  auto* jo = app.add_option("--join", join, "register with the coordinator's control port HOST:PORT");
  app.add_option("--registry", registry_url, "register in etcd: etcd://HOST:PORT/PREFIX")->excludes(jo);
  app.add_option("--heartbeat-ms", heartbeat_ms, "heartbeat interval when registered")->capture_default_str();
  app.add_option("--speed", speed, "announce this speed (GFLOP/s) instead of measuring it (0: measure)");
  app.add_option("--advertise", advertise,
                 "address announced to the registry (default: --host, or with --host 0.0.0.0 the local address of the "
                 "route to the registry)");
  app.add_option("--max-memory", max_memory_mib,
                 "offer at most this much memory to the cluster, in MiB (0: all free memory)")
      ->check(CLI::NonNegativeNumber);
  int test_write_delay_ms = 0;
  app.add_option("--test-write-delay-ms", test_write_delay_ms,
                 "testing only: every frame sent waits this long before it is written (a slow link)")
      ->check(CLI::Range(0, 60000));
  baton::LogSettings log;
  baton::tools::add_log_options(app, log);
  if (auto code = baton::tools::parse_tool_command_line(app, argc, argv, "engine-worker")) return *code;
  o.test_write_delay = std::chrono::milliseconds(test_write_delay_ms);
  if (mmap) o.placement = baton::WeightPlacement::kMapped;
  // Logs go to stderr (and --log-file); stdout carries only the start line.
  log.node = o.node_id;
  try {
    baton::tools::apply_log_options("engine-worker", log);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  // A coordinator vanishing must not kill the worker with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);

  // Block the shutdown signals in every thread; main waits for them with sigwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  int status = 0;
  try {
    if (secret_file.empty() && !insecure) {
      fmt::print(stderr, "error: pass --secret-file FILE, or --insecure explicitly to run without authentication\n");
      return 2;
    }
    o.auth = insecure ? baton::net::AuthConfig::insecure()
                      : baton::net::AuthConfig::with_secret(baton::net::load_secret_file(secret_file));
    if (!std::filesystem::is_regular_file(o.model_path)) {
      fmt::print(stderr, "error: model file {} does not exist\n", o.model_path);
      return 1;
    }
    o.keep_load_without_coordinator = !join.empty() || !registry_url.empty();
    baton::registry::ControlJoinOptions jo_opts;  // checked before listening: a typo fails fast
    if (!join.empty()) std::tie(jo_opts.host, jo_opts.port) = baton::registry::parse_host_port(join, "--join");
    if (!registry_url.empty()) baton::registry::parse_etcd_url(registry_url);
    if (advertise.empty() && baton::tools::is_wildcard_address(o.host) && (!join.empty() || !registry_url.empty())) {
      const auto etcd =
          registry_url.empty() ? baton::registry::EtcdUrl{} : baton::registry::parse_etcd_url(registry_url);
      advertise = join.empty() ? baton::tools::local_address_towards(etcd.host, etcd.port)
                               : baton::tools::local_address_towards(jo_opts.host, jo_opts.port);
      spdlog::info(
          "engine-worker {}: advertising {} (the local address of the route to the registry; --advertise "
          "overrides)",
          o.node_id, advertise);
    }
    baton::pipeline::Worker worker(o);
    if (!pid_file.empty()) {
      std::ofstream out(pid_file);
      if (!(out << getpid() << "\n")) baton::fail("cannot write pid file {}", pid_file);
    }
    fmt::print("engine-worker {} listening on {}:{}\n", o.node_id, o.host, worker.port());
    std::fflush(stdout);
    spdlog::info("engine-worker {} listening on {}:{} (model {}, {})", o.node_id, o.host, worker.port(), o.model_path,
                 insecure ? "insecure" : "authenticated");
    baton::tools::notify_systemd(fmt::format("READY=1\nSTATUS=listening on {}:{}", o.host, worker.port()));
    std::unique_ptr<baton::registry::Membership> membership;
    if (!join.empty() || !registry_url.empty()) {
      const auto interval = std::chrono::milliseconds(std::max(50, heartbeat_ms));
      const auto file = baton::gguf::GgufFile::open(o.model_path);
      baton::registry::ProbeInput probe;
      probe.node_id = o.node_id;
      probe.host = advertise.empty() ? o.host : advertise;
      probe.port = worker.port();
      probe.threads = o.threads > 0 ? o.threads : static_cast<int>(std::thread::hardware_concurrency());
      probe.speed = speed > 0 ? speed : baton::registry::calibrate_gflops(probe.threads);
      const uint64_t cap = max_memory_mib > 0 ? static_cast<uint64_t>(max_memory_mib * 1048576.0) : UINT64_MAX;
      auto base = baton::registry::probe_node(probe, *file);
      base.memory_free = std::min(base.memory_free, cap);
      spdlog::info("engine-worker {}: calibration {:.1f} GFLOP/s, {} MiB free, identity {}", o.node_id, base.speed,
                   base.memory_free >> 20, base.model_identity);
      auto load = std::make_shared<baton::registry::CpuLoad>(probe.threads);
      auto status = [base, load, cap] {
        auto r = base;
        try {
          r.memory_free = std::min(baton::registry::read_meminfo().available, cap);
        } catch (const std::exception&) {
        }
        r.load = static_cast<float>(load->sample());
        r.readings = baton::registry::read_node_readings();
        return r;
      };
      if (!join.empty()) {
        jo_opts.auth = o.auth;
        jo_opts.heartbeat_interval = interval;
        membership = baton::registry::start_control_join(o.node_id, jo_opts, status);
      } else {
        membership =
            baton::registry::start_backend_join(baton::registry::EtcdRegistry::open(registry_url), interval, status);
      }
    }
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("engine-worker {}: signal {}, shutting down", o.node_id, sig);
    baton::tools::notify_systemd("STOPPING=1");
    if (membership) membership->stop(fmt::format("worker shutting down (signal {})", sig));
    worker.stop();
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    status = 1;
  }
  if (!pid_file.empty()) std::filesystem::remove(pid_file);
  return status;
}
