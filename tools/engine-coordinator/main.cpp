// engine-coordinator: the OpenAI-compatible HTTP server (docs/API.md).
//   engine-coordinator --model FILE [--host 127.0.0.1] [--port 8021]   one process, all layers
//   engine-coordinator --config cluster.yaml                            a cluster of engine-workers,
//                                                                       served at cluster.master
// Options: --api-key KEY | --api-key-file F, --slots N, --queue N, -c/--ctx N, -t/--threads N,
// --n-batch N, --alias NAME, --chat-template NAME, -to/--timeout S, --header-timeout S,
// --max-connections N, --no-webui (no chat page and dashboard at GET /), --cors-origin ORIGIN,
// --no-slots, --secret-file F, --take-over and --request-timeout S (with --config; the secret as systemd's credential);
// --spec, --draft-max/--draft-min, --model-draft (speculative decoding); llama-server's -np/--parallel,
// -b/--batch-size,
// --ctx-size; -ngl is ignored with a note. Prints "listening on http://HOST:PORT" once it accepts connections;
// SIGTERM/SIGINT: stop accepting, abort running requests, exit 0. Under systemd (Type=notify) READY=1 follows the
// "listening on" line.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <string_view>
#include <thread>

#include "tools/spec_options.h"
#include "tools/common_cli.h"
#include "tools/context_check.h"
#include "tools/systemd_notify.h"
#include "tools/logging.h"
#include "loading_server.h"
#include "engine/api/http_server.h"
#include "engine/api/served_model.h"
#include "engine/cluster/cluster_config.h"

namespace {

std::string read_key_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) baton::fail("cannot read --api-key-file {}", path);
  std::string key;
  std::getline(in, key);
  while (!key.empty() && (key.back() == '\r' || key.back() == ' ' || key.back() == '\t')) key.pop_back();
  if (key.empty()) baton::fail("--api-key-file {}: the first line is empty", path);
  return key;
}

}  // namespace

int main(int argc, char** argv) {
  baton::tools::log_to_stderr("engine-coordinator");
  CLI::App app{"Serve a model (one process or a cluster of engine-workers) over an OpenAI-compatible HTTP API"};
  std::string model_path, config_path, api_key, api_key_file;
  baton::api::ServeOptions so;
  baton::api::ServerOptions http;
  auto* model_opt = app.add_option("-m,--model", model_path, "GGUF model: serve it in this process");
  auto* config_opt = app.add_option("--config", config_path, "cluster YAML: serve the cluster at cluster.master");
  model_opt->excludes(config_opt);
  auto* host_opt = app.add_option("--host", http.host, "listen address (default 127.0.0.1)");
  auto* port_opt = app.add_option("--port", http.port, "listen port (default 8021; 0 = any free port)");
  std::string secret_file;
  app.add_option(
      "--secret-file", secret_file,
      "with --config: the cluster secret from this file instead of cluster.secret_file (systemd's credential "
      "directory, scripts/deploy/systemd)");
  app.add_option("--api-key", api_key, "require 'Authorization: Bearer KEY' (all routes but /health)");
  app.add_option("--api-key-file", api_key_file, "like --api-key, the key being the file's first line");
  app.add_option("--slots,--parallel", so.scheduler.slots, "sequences generated at once (KV cache slots; also -np)")
      ->check(CLI::Range(1, 256));
  app.add_option("--queue", so.scheduler.queue_limit, "requests waiting for a slot before 503")
      ->check(CLI::Range(0, 100000));
  app.add_option("-b,--n-batch,--batch-size", so.scheduler.n_batch, "tokens per forward pass")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option(
         "--prefill-chunk", so.scheduler.prefill_chunk,
         "prompt tokens per pass: pieces of the n-batch chunks in flight at several stages at once (same "
         "bits; 0: 128 / stages within [8, 32] on a cluster, about 4 per stage for a short prompt; whole chunks "
         "locally)")
      ->check(CLI::Range(0, 1 << 20));
  bool no_cache_prompt = false;
  app.add_flag("--no-cache-prompt", no_cache_prompt,
               "do not keep finished requests' KV for prompts that share their prefix (default: kept in idle slots)");
  app.add_option("-c,--ctx,--ctx-size", so.n_ctx,
                 fmt::format("context length (default: the model's, at most {})", baton::kDefaultContextCap));
  app.add_option("-t,--threads", so.threads, "compute threads (default: all cores)");
  bool mmap = false;
  app.add_flag("--mmap", mmap,
               "with --model: keep the weights in the file mapping (no copy, no repacked layout): pages can be evicted "
               "and re-read under memory pressure, decode is slower");
  app.add_option("--alias", so.alias, "model id in the API (default: the file name without .gguf)");
  app.add_option("--chat-template", so.chat_template, "chat template by name (default: the model's)");
  app.add_option("--http-threads", http.threads, "HTTP worker threads (default slots + queue + 8)");
  app.add_option(
         "--timeout", http.timeout_s,
         "seconds a request body may take to arrive, and a response write may wait for the client (default 600)")
      ->check(CLI::Range(0.001, 86400.0));
  app.add_option("--header-timeout", http.header_timeout_s,
                 "seconds a request's headers may take from its first byte; then 408 (default 10)")
      ->check(CLI::Range(0.001, 3600.0));
  app.add_option("--max-connections", http.max_connections,
                 "open HTTP connections; more are answered 503 at once (default 1024)")
      ->check(CLI::Range(1, 100000));
  bool no_webui = false;
  app.add_flag("--no-webui", no_webui, "do not serve the chat page and dashboard at GET / (the API stays)");
  app.add_option(
         "--cors-origin", http.cors_origins,
         "let browser pages from ORIGIN call the API (repeat or comma-separate; '*' = any; default: same origin only)")
      ->take_all();
  baton::tools::SpecOptions spec;
  spec.add_to(app);
  app.add_flag("--take-over", so.take_over, std::string("with --config: ") + baton::pipeline::kTakeOverHelp);
  double request_timeout_s = 30;
  app.add_option("--request-timeout", request_timeout_s,
                 std::string("with --config: ") + baton::pipeline::kRequestTimeoutHelp)
      ->check(CLI::Range(0.001, 86400.0));
  bool no_slots = false;
  app.add_flag("--no-slots", no_slots, "disable GET /slots (501), as llama-server's --no-slots");
  baton::LogSettings log;
  baton::tools::add_log_options(app, log);
  // llama-server's -to and -np: CLI11 takes one-letter short names only.
  if (auto code = baton::tools::parse_tool_command_line(app, argc, argv, "engine-coordinator",
                                                        {.renames = {{"-to", "--timeout"}, {"-np", "--parallel"}}}))
    return *code;
  try {
    baton::tools::apply_log_options("engine-coordinator", log);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  http.webui = !no_webui;
  so.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(request_timeout_s * 1000));
  if (mmap) so.placement = baton::WeightPlacement::kMapped;
  so.scheduler.cache_prompt = !no_cache_prompt;
  try {
    so.scheduler.speculation = spec.resolve();
    so.model_draft = spec.model_draft;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  http.slots_endpoint = !no_slots;
  if (model_path.empty() && config_path.empty()) {
    fmt::print(stderr, "error: give --model FILE or --config cluster.yaml\n");
    return 1;
  }
  if (!api_key.empty() && !api_key_file.empty()) {
    fmt::print(stderr, "error: give --api-key or --api-key-file, not both\n");
    return 1;
  }

  // Every thread started from here on inherits the blocked signals; main waits for them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  try {
    http.api_key = api_key_file.empty() ? api_key : read_key_file(api_key_file);
    std::unique_ptr<baton::api::ServedModel> model;
    if (!config_path.empty()) {
      auto config = baton::parse_cluster_config_file(config_path);
      if (!secret_file.empty()) {
        if (config.insecure) baton::fail("--secret-file: {} sets cluster.insecure: true", config_path);
        config.secret_file = secret_file;
      }
      if (!host_opt->count()) http.host = config.master_host;
      if (!port_opt->count()) http.port = config.master_port;
      baton::tools::warn_if_ctx_above_trained("engine-coordinator", config.model, so.n_ctx);
      // Listen at once: /health answers 503 "loading" with progress until the cluster serves.
      auto progress = std::make_shared<baton::pipeline::LoadProgress>();
      baton::pipeline::LoadProgress::install(progress);
      baton::coordinator::LoadingServer loading(progress, http.host, http.port);
      http.port = loading.port();
      spdlog::info("loading: http://{}:{}/health answers 503 with progress until the cluster is loaded", http.host,
                   http.port);
      progress->start_reporting();
      model = baton::api::ServedModel::open_cluster(config, so);
      progress->done();
      baton::pipeline::LoadProgress::install(nullptr);  // re-plans later are not "loading"
      loading.stop();                                   // the real server binds the same port next
      spdlog::info("cluster ready: {} ({} layers) on {} nodes", config.model, model->info().n_layer,
                   model->plan().size());
      fmt::print("| node | address | layers |\n| --- | --- | --- |\n");
      for (const auto& n : model->plan())
        fmt::print("| {} | {}:{} | {} |\n", n.node_id, n.host, n.port, to_string(n.layers));
    } else {
      baton::tools::warn_if_ctx_above_trained("engine-coordinator", model_path, so.n_ctx);
      model = baton::api::ServedModel::open_local(model_path, so);
    }
    baton::api::HttpServer server(*model, http);
    // After the loading server, the port may take a moment to be free again (its last
    // connections closing): retry the bind for up to 3 s before giving up.
    for (int attempt = 0;; ++attempt) {
      try {
        server.start();
        break;
      } catch (const std::exception&) {
        if (config_path.empty() || attempt >= 30) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    fmt::print("listening on http://{}:{}\n", http.host, server.port());
    std::fflush(stdout);
    spdlog::info("serving {} ({} slots, context {}){}", model->info().id, so.scheduler.slots, model->info().n_ctx,
                 http.api_key.empty() ? "" : ", API key required");
    baton::tools::notify_systemd(
        fmt::format("READY=1\nSTATUS=serving {} at http://{}:{}", model->info().id, http.host, server.port()));
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("engine-coordinator: signal {}, shutting down", sig);
    baton::tools::notify_systemd("STOPPING=1");
    server.stop();
    model.reset();
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
