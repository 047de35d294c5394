// The cluster topology file (YAML) of engine-coordinator, and the layer plan derived from it.
//
//   model: models/llama.Q4_K_M.gguf          # the coordinator's copy: tokenizer, embeddings, output head
//   cluster:
//     master: { host: 127.0.0.1, port: 8021 } # HTTP API; control_port defaults to port + 1
//     secret_file: cluster.secret             # or `insecure: true`
//     activations: f32                        # or f16 / bf16: half the bytes, one rounding per hop
//     nodes:
//       - { id: node-01, host: 10.0.0.11, port: 8010, layers: [0, 1], weight: 32 }  # inclusive
//       - { id: node-02, host: 10.0.0.12, port: 8010, layers: auto, weight: 16 }
//
// Dynamic membership (docs/REGISTRY.md): `nodes: auto` plans over the workers that register
// (`engine-worker --join MASTER_HOST:CONTROL_PORT`, or `--registry` with `registry: etcd://...`):
//     nodes: auto
//     min_nodes: 2             # wait for at least this many registrations ...
//     join_timeout: 60         # ... for at most this many seconds
//     heartbeat_timeout: 3     # a node silent this long is offline
//     registry_file: nodes.json  # the embedded registry's persistence (default: <yaml>.nodes.json)
// Mixed: a list of nodes with an `auto` entry: listed nodes with `layers` keep exactly those
// layers (they need not join), listed nodes without are required members (planned once they
// joined), and any other worker that joins is planned too (nodes_auto and nodes both set):
//     nodes:
//       - { id: big, host: 10.0.0.11, port: 8010, layers: [0, 11] }
//       - { id: w2, host: 10.0.0.12, port: 8010 }
//       - auto
//
// Parsing checks types and required fields; every error names the file, the line and the field.
// plan_layers() (engine/cluster/planner.h) checks the layer assignment against the model's n_layer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/cluster/stage_assignment.h"

namespace baton {

struct NodeConfig {
  std::string id;
  std::string host;
  uint16_t port = 0;
  std::optional<LayerSpan> layers;  // YAML's inclusive [first, last] as a span; nullopt = auto
  double weight = 1.0;              // relative capacity (memory in GB) for auto
  int line = 0;                     // where it is defined, for messages
};

struct ClusterConfig {
  std::string source;  // the file name, for messages
  std::string model;   // resolved relative to the YAML file's directory
  std::string master_host = "127.0.0.1";
  uint16_t master_port = 8021;
  uint16_t control_port = 0;  // 0 = master_port + 1
  std::string secret_file;    // resolved like model
  bool insecure = false;
  double connect_timeout_s = 30;    // connecting to all nodes, with retry and backoff
  double load_timeout_s = 300;      // Prepare → Ready for every node
  std::string registry;             // "" (embedded) or etcd://host:port/prefix
  std::string activations = "f32";  // on the wire between stages: f32 (exact), f16 or bf16
  bool nodes_auto = false;          // `nodes: auto`, or an `auto` entry in the list (mixed)
  int min_nodes = 1;                // nodes: auto — registrations to wait for before planning
  double join_timeout_s = 60;       // nodes: auto — how long to wait for them
  double heartbeat_timeout_s = 3;   // registry: silent this long -> offline
  std::string registry_file;        // embedded registry persistence; resolved like model
  std::vector<NodeConfig> nodes;
};

// Throws baton::Error naming the file, line and field.
ClusterConfig parse_cluster_config_file(const std::string& path);
ClusterConfig parse_cluster_config(const std::string& yaml_text, const std::string& source,
                                   const std::string& base_dir = ".");

}  // namespace baton
