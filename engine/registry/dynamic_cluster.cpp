#include "engine/registry/dynamic_cluster.h"

#include <spdlog/spdlog.h>

#include <fmt/ranges.h>

#include <map>

#include "engine/base/error.h"
#include "engine/pipeline/load_progress.h"
#include "engine/registry/etcd_registry.h"
#include "engine/registry/planned_node_state.h"
#include "gguf/gguf_file.h"
#include "net/auth.h"

namespace baton::registry {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

std::chrono::milliseconds seconds_ms(double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); }

net::AuthConfig auth_of(const ClusterConfig& c) {
  if (c.insecure) return net::AuthConfig::insecure();
  if (c.secret_file.empty()) fail("{}: cluster needs secret_file or `insecure: true`", c.source);
  return net::AuthConfig::with_secret(net::load_secret_file(c.secret_file));
}

}  // namespace

DynamicCluster::DynamicCluster(const ClusterConfig& config, DynamicClusterOptions options,
                               std::shared_ptr<ModelFront> front)
    : config_(config), options_(std::move(options)), created_(Clock::now()), front_(std::move(front)) {
  if (!config_.nodes_auto) fail("{}: a dynamic cluster needs `nodes: auto`", config_.source);
  if (!front_) {
    ModelFrontOptions fo;
    fo.threads = options_.cluster.threads;
    fo.n_ctx = options_.cluster.n_ctx;
    front_ = std::make_shared<ModelFront>(config_.model, fo);
  }
  unloaded_ = std::make_unique<UnavailableLayers>(front_->n_ctx(), [this] {
    std::lock_guard lock(plan_mutex_);
    return fmt::format("the cluster has no loaded pipeline: {}",
                       replan_error_.empty() ? std::string("not started") : replan_error_);
  });
  footprint_ = ModelFootprint::from_file(*front_->file(), options_.cluster.n_ctx, options_.cluster.max_sequences);
  for (const auto& n : config_.nodes) {
    if (!n.layers) {
      required_.push_back(n.id);
      continue;
    }
    NodeRecord record;
    record.node_id = n.id;
    record.host = n.host;
    record.port = n.port;
    record.model_identity = footprint_.model_identity;
    set_served_layers(record, *n.layers);
    pinned_.push_back(planned_stage(record, *n.layers));
  }
  // Every pipeline of this coordinator is one holder to the workers (a re-plan is no take-over).
  if (options_.cluster.coordinator_id.empty()) options_.cluster.coordinator_id = pipeline::default_coordinator_id();
  NodeRegistryOptions ro;
  ro.heartbeat_timeout = seconds_ms(config_.heartbeat_timeout_s);
  ro.persist_path = config_.registry_file;
  ro.n_layer = footprint_.n_layer;
  registry_ = std::make_unique<NodeRegistry>(ro);
  if (config_.registry.empty()) {
    control_ =
        std::make_unique<ControlListener>(*registry_, auth_of(config_), config_.master_host, config_.control_port);
  } else {
    backend_ = EtcdRegistry::open(config_.registry);
    registry_->sync_from_backend(backend_->list());
    watcher_ = std::thread([this] { watch_backend(); });
  }
  monitor_ = std::thread([this] { monitor(); });
}

DynamicCluster::~DynamicCluster() {
  stopping_ = true;
  if (watcher_.joinable()) watcher_.join();
  if (monitor_.joinable()) monitor_.join();
  {
    std::lock_guard lock(cluster_mutex_);
    cluster_.reset();  // Goodbye to the data connections first
  }
  if (control_) control_->stop();
}

void DynamicCluster::watch_backend() {
  while (!stopping_) {
    try {
      if (auto live = backend_->wait_for_change(500ms)) registry_->sync_from_backend(*live);
    } catch (const std::exception& e) {
      spdlog::warn("registry: watching {} failed (retrying): {}", config_.registry, e.what());
      std::this_thread::sleep_for(500ms);
    }
  }
}

// Logs the transitions that matter for serving: a planned node offline -> not ready.
void DynamicCluster::monitor() {
  uint64_t seen = 0;
  std::map<std::string, NodeState> last;
  while (!stopping_) {
    seen = registry_->wait_for_change(seen, 200ms);
    if (!loaded_) continue;
    for (const auto& p : plan()) {
      auto e = registry_->find(p.record.node_id);
      if (!e && untracked(p.record.node_id)) continue;
      const std::string moved = e ? moved_since_planned(p, *e) : std::string();
      const NodeState now = e && moved.empty() ? e->state : NodeState::kOffline;
      const std::string why = !moved.empty() ? moved : e ? e->reason : std::string("unknown");
      auto [it, fresh] = last.try_emplace(p.record.node_id, NodeState::kOnline);
      if (now == NodeState::kOffline && it->second != NodeState::kOffline) {
        {
          std::lock_guard lock(plan_mutex_);
          if (broken_.empty())
            broken_ = fmt::format(
                "node {} (layers {}) went offline ({}); the loaded pipeline is broken until "
                "the coordinator re-plans",
                p.record.node_id, to_string(p.stage.layers), why);
        }
        // A silent node (frozen, or cut off without a FIN) keeps its connection open: fail the
        // passes waiting on it now, so the scheduler's repair re-plans instead of waiting out
        // the pipeline's request timeout.
        std::lock_guard lock(cluster_mutex_);
        if (cluster_)
          cluster_->abandon_node(p.record.node_id, fmt::format("node {} went offline ({})", p.record.node_id, why));
      }
      if (now == NodeState::kOffline && it->second != NodeState::kOffline)
        spdlog::warn(
            "registry event=re-plan node={} reason=\"planned node (layers {}) offline: {}; cluster not "
            "ready until a re-plan over the nodes that remain\"",
            p.record.node_id, to_string(p.stage.layers), why);
      else if (now != NodeState::kOffline && it->second == NodeState::kOffline)
        spdlog::info("registry event=node-back node={} reason=\"planned node online again\"", p.record.node_id);
      it->second = now;
    }
  }
}

std::vector<PlannedStage> DynamicCluster::saved_plan_if_complete(const std::vector<NodeEntry>& online) const {
  auto saved = registry_->plan();
  if (!saved || saved->model_identity != footprint_.model_identity || saved->n_ctx != footprint_.n_ctx ||
      saved->max_sequences != footprint_.max_sequences || saved->ranges.empty())
    return {};
  std::vector<NodeRecord> present;  // the online nodes and the pinned ones
  for (const auto& e : online) present.push_back(e.record);
  for (const auto& p : pinned_)
    if (std::none_of(present.begin(), present.end(),
                     [&](const NodeRecord& r) { return r.node_id == p.record.node_id; }))
      present.push_back(p.record);
  std::vector<PlannedStage> plan;
  int64_t next = 0;
  for (const auto& r : saved->ranges) {
    auto it = std::find_if(present.begin(), present.end(), [&](const NodeRecord& n) { return n.node_id == r.node_id; });
    if (it == present.end() || r.layers.begin != next || !serves(*it, r.layers)) return {};
    plan.push_back(planned_stage(*it, r.layers, range_bytes(footprint_, options_.planner, r.layers)));
    next = r.layers.end;
  }
  if (next != footprint_.n_layer) return {};
  return plan;
}

std::vector<NodeEntry> DynamicCluster::wait_for_nodes() {
  const auto deadline = Clock::now() + seconds_ms(config_.join_timeout_s);
  const bool have_saved = registry_->plan().has_value();
  uint64_t version = registry_->version();
  auto last_change = Clock::now();
  size_t last_count = 0;
  const auto progress = pipeline::LoadProgress::current();
  if (progress) progress->begin("joining", static_cast<size_t>(config_.min_nodes), seconds_ms(config_.join_timeout_s));
  while (true) {
    std::vector<NodeEntry> online;
    for (const auto& e : registry_->entries())
      if (usable_for_plan(e, footprint_.model_identity)) online.push_back(e);
    if (online.size() != last_count) last_change = Clock::now(), last_count = online.size();
    if (have_saved && !saved_plan_if_complete(online).empty()) return online;
    size_t count = online.size();  // pinned nodes count whether they joined or not
    for (const auto& p : pinned_) count += untracked(p.record.node_id) ? 1 : 0;
    std::vector<std::string> absent;  // required members not online yet
    for (const auto& id : required_)
      if (std::none_of(online.begin(), online.end(), [&](const NodeEntry& e) { return e.record.node_id == id; }))
        absent.push_back(id);
    const bool enough = count >= static_cast<size_t>(config_.min_nodes) && absent.empty();
    if (progress) progress->registered(count, static_cast<size_t>(config_.min_nodes));
    if (enough && !have_saved && Clock::now() - last_change >= options_.settle) return online;
    if (Clock::now() >= deadline) {
      if (enough) {
        if (have_saved)
          spdlog::warn("registry: the saved plan's nodes did not all return within {} s; planning anew",
                       config_.join_timeout_s);
        return online;
      }
      std::vector<std::string> seen;
      for (const auto& e : registry_->entries())
        seen.push_back(fmt::format("{} ({}{})", e.record.node_id, to_string(e.state),
                                   e.record.model_identity == footprint_.model_identity ? "" : ", other model"));
      fail("{}: waited {} s for {} node(s) to join {}:{}{}; {} usable: {}", config_.source, config_.join_timeout_s,
           config_.min_nodes, config_.master_host, control_port(),
           absent.empty() ? std::string() : fmt::format(" (listed nodes missing: {})", fmt::join(absent, ", ")),
           online.size(), seen.empty() ? std::string("none registered") : fmt::format("{}", fmt::join(seen, ", ")));
    }
    version = registry_->wait_for_change(version, 50ms);
  }
}

void DynamicCluster::start() {
  const auto online = wait_for_nodes();
  auto plan = saved_plan_if_complete(online);
  readopted_ = !plan.empty();
  if (plan.empty()) {
    std::vector<NodeRecord> records;
    for (const auto& e : online) records.push_back(e.record);
    plan = plan_over(records);
    spdlog::info("registry event=planned nodes={} reason=\"{} usable node(s)\"", plan.size(), online.size());
  } else {
    spdlog::info("registry event=planned nodes={} reason=\"re-using the saved plan: every node is back\"", plan.size());
  }
  {
    std::lock_guard lock(plan_mutex_);
    plan_ = plan;
    considered_.clear();
    for (const auto& e : online) considered_.insert(e.record.node_id);
  }
  load(plan);
  serve_ms_ = std::chrono::duration<double, std::milli>(Clock::now() - created_).count();
  spdlog::info("registry plan:\n{}", plan_table());
  spdlog::info("registry event=serving nodes={} ms={:.0f} reason=\"{}\"", plan.size(), serve_ms_,
               readopted_ ? "re-adopted the saved plan" : "new plan loaded");
}

void DynamicCluster::load(const std::vector<PlannedStage>& plan) {
  std::vector<StageAssignment> stages;
  for (const auto& p : plan) {
    stages.push_back(p.stage);
    registry_->set_state(p.record.node_id, NodeState::kLoading,
                         fmt::format("loading layers {}", to_string(p.stage.layers)));
  }
  spdlog::info("registry event=load-prepare nodes={}", plan.size());
  std::unique_ptr<pipeline::Chain> fresh;
  try {
    fresh = std::make_unique<pipeline::Chain>(*front_, std::move(stages),
                                              pipeline::chain_options(config_, options_.cluster));
  } catch (const std::exception& e) {
    for (const auto& p : plan) registry_->set_state(p.record.node_id, NodeState::kOnline, "load rolled back");
    spdlog::error("registry event=load-rolled-back reason=\"{}\"", e.what());
    const std::string why = fmt::format("loading the plan failed: {}", e.what());
    tell_servable(why);  // nothing is loaded now
    set_replan_error(why);
    throw;
  }
  {
    std::lock_guard lock(cluster_mutex_);
    cluster_ = std::move(fresh);
  }
  tell_layers();
  for (const auto& p : plan) registry_->set_state(p.record.node_id, NodeState::kOnline, "load committed");
  spdlog::info("registry event=load-committed nodes={}", plan.size());
  SavedPlan saved{footprint_.model_identity, footprint_.n_ctx, footprint_.max_sequences, {}};
  for (const auto& p : plan) saved.ranges.push_back({p.record.node_id, p.stage.layers});
  registry_->set_plan(saved);
  tell_servable("");  // before snapshot() can say ready
  loaded_ = true;
}

void DynamicCluster::tell_servable(const std::string& refusal) const {
  if (servable_listener_) servable_listener_(refusal);
}

LayerRunner& DynamicCluster::layers() {
  std::lock_guard lock(cluster_mutex_);
  if (cluster_) return cluster_->layers();
  return *unloaded_;
}

void DynamicCluster::tell_layers() {
  if (layers_listener_) layers_listener_(layers());
}

std::vector<StageAssignment> DynamicCluster::node_plan() const {
  std::lock_guard lock(cluster_mutex_);
  return cluster_ ? cluster_->stages() : std::vector<StageAssignment>{};
}

std::optional<pipeline::ClusterMetrics> DynamicCluster::metrics() const {
  std::lock_guard lock(cluster_mutex_);
  if (!cluster_) return std::nullopt;
  return cluster_->metrics();
}

pipeline::Chain& DynamicCluster::cluster() {
  if (!cluster_) fail("the dynamic cluster is not loaded yet (start() first)");
  return *cluster_;
}

uint16_t DynamicCluster::control_port() const { return control_ ? control_->port() : 0; }

std::vector<PlannedStage> DynamicCluster::plan() const {
  std::lock_guard lock(plan_mutex_);
  return plan_;
}

std::string DynamicCluster::plan_table() const {
  return format_plan_table(plan(), fmt::format("{}:{}", config_.master_host, config_.master_port));
}

}  // namespace baton::registry
