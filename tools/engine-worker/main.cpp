// engine-worker: serves a layer range of a model to an engine-coordinator (see engine/pipeline/
// worker.h and docs/PROTOCOL.md).
//   engine-worker --host 127.0.0.1 --port 8010 --node-id node-01 --model FILE [--threads N]
//                 (--secret-file F | --insecure) [--pid-file F]
// Prints one start line "engine-worker <id> listening on <host>:<port>" (port 0 -> the bound
// port). SIGTERM/SIGINT: clean shutdown, pid file removed, exit 0.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "engine/base/error.h"
#include "engine/pipeline/worker.h"
#include "net/auth.h"

int main(int argc, char** argv) {
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
  app.add_option("--pid-file", pid_file, "write the process id here; removed on exit");
  CLI11_PARSE(app, argc, argv);
  // Logs go to stderr; stdout carries only the start line.
  spdlog::set_default_logger(spdlog::stderr_color_mt("engine-worker"));
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
    baton::pipeline::Worker worker(o);
    if (!pid_file.empty()) {
      std::ofstream out(pid_file);
      if (!(out << getpid() << "\n")) baton::fail("cannot write pid file {}", pid_file);
    }
    fmt::print("engine-worker {} listening on {}:{}\n", o.node_id, o.host, worker.port());
    std::fflush(stdout);
    spdlog::info("engine-worker {} listening on {}:{} (model {}, {})", o.node_id, o.host, worker.port(),
                 o.model_path, insecure ? "insecure" : "authenticated");
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("engine-worker {}: signal {}, shutting down", o.node_id, sig);
    worker.stop();
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    status = 1;
  }
  if (!pid_file.empty()) std::filesystem::remove(pid_file);
  return status;
}
