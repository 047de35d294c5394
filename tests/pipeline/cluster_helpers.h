// Helpers shared by the pipeline tests: cluster YAML for workers spawned on 127.0.0.1.
#pragma once

#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "engine/cluster/cluster_config.h"
#include "engine/runtime/generator.h"
#include "fixtures.h"
#include "worker_process.h"

namespace baton::test {

struct ClusterNode {
  const WorkerProcess* worker;
  int64_t first, last;  // inclusive
};

// `auth`: "insecure: true" or "secret_file: PATH"; `extra`: more cluster keys, one per line.
inline std::string cluster_yaml(const std::string& model, const std::vector<ClusterNode>& nodes,
                                const std::string& auth, double connect_timeout = 5, double load_timeout = 20,
                                const std::string& extra = "") {
  std::string y = fmt::format("model: {}\ncluster:\n  {}\n  connect_timeout: {}\n  load_timeout: {}\n", model, auth,
                              connect_timeout, load_timeout);
  if (!extra.empty()) y += "  " + extra + "\n";
  y += "  nodes:\n";
  for (const auto& n : nodes)
    y += fmt::format("    - {{ id: {}, host: 127.0.0.1, port: {}, layers: [{}, {}] }}\n", n.worker->id(),
                     n.worker->port(), n.first, n.last);
  return y;
}

inline ClusterConfig config_of(const std::string& yaml) { return parse_cluster_config(yaml, "test.yaml", "/"); }

// Greedy generation of n tokens, reporting the top n_top log-probabilities of each step.
inline GenerateOptions greedy_options(int n, size_t n_top = 0) {
  GenerateOptions go;
  go.n_predict = n;
  go.sampling.temperature = 0;
  go.n_top_logprobs = n_top;
  return go;
}

// n insecure workers node-01.. (or with --secret-file).
inline std::vector<std::unique_ptr<WorkerProcess>> spawn_workers(const std::string& model, int n,
                                                                 const std::string& secret_file = "",
                                                                 std::vector<std::string> extra = {}) {
  std::vector<std::unique_ptr<WorkerProcess>> w;
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> args = secret_file.empty() ? std::vector<std::string>{"--insecure"}
                                                        : std::vector<std::string>{"--secret-file", secret_file};
    args.insert(args.end(), extra.begin(), extra.end());
    w.push_back(std::make_unique<WorkerProcess>(fmt::format("node-{:02}", i + 1), model, args));
  }
  return w;
}

}  // namespace baton::test
