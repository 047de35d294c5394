// engine-ctl: operate a Baton cluster.
//   engine-ctl status --coordinator HOST:PORT [--api-key KEY]   the live cluster table (GET /v1/cluster)
//   engine-ctl doctor cluster.yaml [--ctx N] [--slots N]         pre-flight checks; exit 0 = all good
//   engine-ctl inventory-to-config TABLE --model FILE [-o cluster.yaml]   cluster.yaml from a topology table
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <csignal>

#include "tools/common_cli.h"
#include "tools/logging.h"
#include "commands.h"
#include "engine/model/model_config.h"

int main(int argc, char** argv) {
  // Quiet by default: engine-ctl prints its findings itself; --log-level shows what it does.
  baton::tools::log_to_stderr("engine-ctl", spdlog::level::warn);
  CLI::App app{"Operate a Baton cluster"};
  app.require_subcommand(1);
  baton::ctl::StatusArgs status;
  auto* st = app.add_subcommand("status", "print the cluster table of a running coordinator");
  st->add_option("--coordinator", status.coordinator, "the coordinator's HTTP address HOST:PORT")->required();
  st->add_option("--api-key", status.api_key, "API key (Authorization: Bearer)");
  st->add_option("--timeout", status.timeout_s, "seconds")->capture_default_str();
  baton::ctl::DoctorArgs doctor;
  auto* dr = app.add_subcommand("doctor", "check a cluster YAML before starting it");
  dr->add_option("config", doctor.config, "cluster YAML")->required();
  dr->add_option("-c,--ctx,--ctx-size", doctor.n_ctx,
                 fmt::format("context length (default: the model's, at most {})", baton::kDefaultContextCap));
  dr->add_option("--slots,--parallel", doctor.slots, "KV cache slots per worker (also -np)")->capture_default_str();
  dr->add_option("--timeout", doctor.timeout_s, "seconds per port probe")->capture_default_str();
  baton::ctl::InventoryArgs inventory;
  auto* inv =
      app.add_subcommand("inventory-to-config",
                         "write cluster.yaml from a topology table (TSV/CSV: id, host, memory, optional layers, port)");
  inv->add_option("inventory", inventory.inventory, "the table; the first line names the columns")->required();
  inv->add_option("-m,--model", inventory.model, "the coordinator's GGUF (relative paths: to the output's directory)")
      ->required();
  auto* inv_secret =
      inv->add_option("--secret-file", inventory.secret_file, "cluster.secret_file")->capture_default_str();
  inv->add_flag("--insecure", inventory.insecure, "write `insecure: true` instead of a secret file")
      ->excludes(inv_secret);
  inv->add_option("--master", inventory.master, "cluster.master HOST:PORT (the HTTP API)")->capture_default_str();
  inv->add_option("--port", inventory.port, "workers' port for rows without a port column")->capture_default_str();
  inv->add_option("-o,--output", inventory.output, "write here instead of stdout");
  inv->add_option(
      "-c,--ctx,--ctx-size", inventory.n_ctx,
      fmt::format("context length for the memory check (default: the model's, at most {})", baton::kDefaultContextCap));
  inv->add_option("--slots,--parallel", inventory.slots, "KV cache slots for the memory check")->capture_default_str();
  baton::LogSettings log;
  baton::tools::add_log_options(app, log);
  app.fallthrough();  // the log flags after the subcommand too
  if (auto code = baton::tools::parse_tool_command_line(
          app, argc, argv, "engine-ctl", {.renames = {{"-np", "--parallel"}}, .ignore_gpu_layers = false}))
    return *code;
  std::signal(SIGPIPE, SIG_IGN);
  try {
    baton::tools::apply_log_options("engine-ctl", log, spdlog::level::warn);
    if (st->parsed()) return baton::ctl::run_status(status);
    if (inv->parsed()) return baton::ctl::run_inventory_to_config(inventory);
    return baton::ctl::run_doctor(doctor);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
