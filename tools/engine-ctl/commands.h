// engine-ctl's two commands, each a function returning the process exit code.
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
  std::string config;   // cluster.yaml
  int64_t n_ctx = 0;    // <= 0: the model's, at most 4096 (as the coordinator)
  int slots = 4;        // KV cache slots per worker (the coordinator's --slots)
  double timeout_s = 2; // per TCP probe
};
// Checks before anything starts: config, model, secret, every node's port (TCP connect, like
// `nc -zv`), layer coverage and memory fit. Prints one line per check; 0 when all pass, else 1.
int run_doctor(const DoctorArgs& args);

}  // namespace baton::ctl
