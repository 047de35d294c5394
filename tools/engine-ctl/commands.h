// engine-ctl's commands, each a function returning the process exit code.
#pragma once

#include <cstdint>
#include <string>

namespace baton::ctl {

struct StatusArgs {
  std::string coordinator;  // HOST:PORT of the HTTP API
  std::string api_key;      // Bearer key, if the server wants one
  double timeout_s = 5;
};
// GET /v1/cluster and print the cluster table. 0 when ready, 1 when not ready or unreachable.
int run_status(const StatusArgs& args);

struct DoctorArgs {
  std::string config;    // cluster.yaml
  int64_t n_ctx = 0;     // <= 0: the model's, at most 4096 (as the coordinator)
  int slots = 4;         // KV cache slots per worker (the coordinator's --slots)
  double timeout_s = 2;  // per TCP probe
};
// Checks before anything starts: config, model, secret, every node's port (TCP connect, like
// `nc -zv`), layer coverage and memory fit. Prints one line per check; 0 when all pass, else 1.
int run_doctor(const DoctorArgs& args);

struct InventoryArgs {
  std::string inventory;  // TSV/CSV: id, host, memory [, layers] [, port]
  std::string model;      // the coordinator's GGUF (relative to the output's directory)
  std::string secret_file = "cluster.secret";
  bool insecure = false;
  std::string master = "0.0.0.0:8021";  // cluster.master HOST:PORT
  uint16_t port = 8010;                 // workers' port where the table has no port column
  std::string output;                   // "" = stdout
  int64_t n_ctx = 0;                    // for the memory check, as doctor's
  int slots = 4;
};
// Writes cluster.yaml from an inventory table (tools/engine-ctl/inventory.cpp); checks it with the
// coordinator's parser and, when the model is readable, its planner. 0 when written, else throws.
int run_inventory_to_config(const InventoryArgs& args);

}  // namespace baton::ctl
