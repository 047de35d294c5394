// engine-coordinator: loads a cluster from its YAML topology and keeps it loaded.
//   engine-coordinator --config cluster.yaml [-t THREADS] [--ctx N]
// For now (the HTTP API comes later) it logs "cluster ready", prints the plan table and waits
// for SIGTERM/SIGINT, then says Goodbye to every worker and exits 0.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>

#include "engine/cluster/cluster_config.h"
#include "engine/pipeline/cluster.h"

int main(int argc, char** argv) {
  CLI::App app{"Load a Baton cluster (engine-workers) and keep it loaded"};
  std::string config_path;
  baton::pipeline::ClusterOptions co;
  app.add_option("--config", config_path, "cluster YAML")->required();
  app.add_option("-t,--threads", co.threads, "threads for embedding and output head (default: all cores)");
  app.add_option("-c,--ctx", co.n_ctx, "context length (default: the model's, at most 4096)");
  CLI11_PARSE(app, argc, argv);

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  try {
    auto config = baton::parse_cluster_config_file(config_path);
    baton::pipeline::Cluster cluster(config, co);
    spdlog::info("cluster ready: {} ({} layers) on {} nodes", config.model, cluster.config().n_layer,
                 cluster.plan().size());
    fmt::print("| node | address | layers |\n| --- | --- | --- |\n");
    for (const auto& n : cluster.plan())
      fmt::print("| {} | {}:{} | {}-{} |\n", n.id, n.host, n.port, n.first, n.last - 1);
    std::fflush(stdout);
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("engine-coordinator: signal {}, shutting down", sig);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
