#include "engine/pipeline/cluster.h"

#include "engine/base/error.h"
#include "engine/cluster/planner.h"
#include "engine/pipeline/wire.h"
#include "net/auth.h"

namespace baton::pipeline {

ChainOptions chain_options(const ClusterConfig& config, const ClusterOptions& options) {
  ChainOptions co;
  if (options.activations) {
    co.activations = *options.activations;
  } else {
    auto d = parse_activation_dtype(config.activations);
    if (!d) fail("{}: cluster.activations must be f32, f16 or bf16, found '{}'", config.source, config.activations);
    co.activations = *d;
  }
  if (config.insecure) co.auth = net::AuthConfig::insecure();
  else if (!config.secret_file.empty())
    co.auth = net::AuthConfig::with_secret(net::load_secret_file(config.secret_file));
  else fail("{}: cluster needs secret_file or `insecure: true`", config.source);
  co.connect_timeout_s = config.connect_timeout_s;
  co.load_timeout_s = config.load_timeout_s;
  co.heartbeat_timeout_s = config.heartbeat_timeout_s;
  co.max_sequences = options.max_sequences;
  co.request_timeout = options.request_timeout;
  co.max_in_flight = options.max_in_flight;
  co.coordinator_id = options.coordinator_id;
  co.take_over = options.take_over;
  return co;
}

Cluster::Cluster(const ClusterConfig& config, const ClusterOptions& options)
    : Cluster(std::make_shared<ModelFront>(config.model, front_options(options)), config, options) {}

Cluster::Cluster(std::shared_ptr<ModelFront> front, const ClusterConfig& config, const ClusterOptions& options)
    : front_(std::move(front)), plan_(plan_layers(config, front_->config().n_layer)) {
  chain_ = std::make_unique<Chain>(*front_, plan_, chain_options(config, options));
}

}  // namespace baton::pipeline
