// engine-ctl: operate a Baton cluster.
//   engine-ctl status --coordinator HOST:PORT [--api-key KEY]   the live cluster table (GET /v1/cluster)
//   engine-ctl doctor cluster.yaml [--ctx N] [--slots N]         pre-flight checks; exit 0 = all good
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <csignal>

#include "tools/logging.h"
#include "commands.h"

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
  dr->add_option("-c,--ctx", doctor.n_ctx, "context length (default: the model's, at most 4096)");
  dr->add_option("--slots", doctor.slots, "KV cache slots per worker")->capture_default_str();
  dr->add_option("--timeout", doctor.timeout_s, "seconds per port probe")->capture_default_str();
  baton::LogSettings log;
  baton::tools::add_log_options(app, log);
  app.fallthrough();  // the log flags after the subcommand too
  CLI11_PARSE(app, argc, argv);
  std::signal(SIGPIPE, SIG_IGN);
  try {
    baton::tools::apply_log_options("engine-ctl", log, spdlog::level::warn);
    if (st->parsed()) return baton::ctl::run_status(status);
    return baton::ctl::run_doctor(doctor);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
