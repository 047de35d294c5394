#include "engine/registry/dynamic_cluster.h"

#include <spdlog/spdlog.h>

#include <fmt/ranges.h>

#include <map>

#include "engine/base/error.h"
#include "engine/registry/etcd_registry.h"
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

bool usable(const NodeEntry& e, const std::string& identity) {
  return e.heard && e.state == NodeState::kOnline && e.record.model_identity == identity;
}

}  // namespace

DynamicCluster::DynamicCluster(const ClusterConfig& config, DynamicClusterOptions options)
    : config_(config), options_(std::move(options)), created_(Clock::now()) {
  if (!config_.nodes_auto) fail("{}: a dynamic cluster needs `nodes: auto`", config_.source);
  {
    auto file = gguf::GgufFile::open(config_.model);
    footprint_ = ModelFootprint::from_file(*file, options_.cluster.n_ctx, options_.cluster.max_sequences);
  }
  NodeRegistryOptions ro;
  ro.heartbeat_timeout = seconds_ms(config_.heartbeat_timeout_s);
  ro.persist_path = config_.registry_file;
  registry_ = std::make_unique<NodeRegistry>(ro);
  if (config_.registry.empty()) {
    control_ = std::make_unique<ControlListener>(*registry_, auth_of(config_), config_.master_host, config_.control_port);
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
  cluster_.reset();  // Goodbye to the data connections first
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
      const NodeState now = e ? e->state : NodeState::kOffline;
      auto [it, fresh] = last.try_emplace(p.record.node_id, NodeState::kOnline);
      if (now == NodeState::kOffline && it->second != NodeState::kOffline) {
        std::lock_guard lock(plan_mutex_);
        if (broken_.empty())
          broken_ = fmt::format("node {} (layers {}-{}) went offline ({}); the loaded pipeline is broken until "
                                "the coordinator re-plans",
                                p.record.node_id, p.first, p.last - 1, e ? e->reason : "unknown");
      }
      if (now == NodeState::kOffline && it->second != NodeState::kOffline)
        spdlog::warn("registry event=re-plan node={} reason=\"planned node (layers {}-{}) offline: {}; cluster not "
                     "ready; requests fail until a re-plan (when idle) or its return and a re-plan\"",
                     p.record.node_id, p.first, p.last - 1, e ? e->reason : "unknown");
      else if (now != NodeState::kOffline && it->second == NodeState::kOffline)
        spdlog::info("registry event=node-back node={} reason=\"planned node online again\"", p.record.node_id);
      it->second = now;
    }
  }
}

std::vector<PlannedNode> DynamicCluster::saved_plan_if_complete(const std::vector<NodeEntry>& online) const {
  auto saved = registry_->plan();
  if (!saved || saved->model_identity != footprint_.model_identity || saved->n_ctx != footprint_.n_ctx ||
      saved->max_sequences != footprint_.max_sequences || saved->ranges.empty())
    return {};
  std::vector<PlannedNode> plan;
  int64_t next = 0;
  for (const auto& r : saved->ranges) {
    auto it = std::find_if(online.begin(), online.end(), [&](const NodeEntry& e) { return e.record.node_id == r.node_id; });
    if (it == online.end() || r.first != next || it->record.layers.empty() ||
        it->record.layers[0].first > r.first || it->record.layers[0].last + 1 < r.last)
      return {};
    plan.push_back({it->record, r.first, r.last, range_bytes(footprint_, options_.planner, r.first, r.last)});
    next = r.last;
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
  while (true) {
    std::vector<NodeEntry> online;
    for (const auto& e : registry_->entries())
      if (usable(e, footprint_.model_identity)) online.push_back(e);
    if (online.size() != last_count) last_change = Clock::now(), last_count = online.size();
    if (have_saved && !saved_plan_if_complete(online).empty()) return online;
    const bool enough = online.size() >= static_cast<size_t>(config_.min_nodes);
    if (enough && !have_saved && Clock::now() - last_change >= options_.settle) return online;
    if (Clock::now() >= deadline) {
      if (enough) {
        if (have_saved) spdlog::warn("registry: the saved plan's nodes did not all return within {} s; planning anew",
                                     config_.join_timeout_s);
        return online;
      }
      std::vector<std::string> seen;
      for (const auto& e : registry_->entries())
        seen.push_back(fmt::format("{} ({}{})", e.record.node_id, to_string(e.state),
                                   e.record.model_identity == footprint_.model_identity ? "" : ", other model"));
      fail("{}: waited {} s for {} node(s) to join {}:{}; {} usable: {}", config_.source, config_.join_timeout_s,
           config_.min_nodes, config_.master_host, control_port(), online.size(),
           seen.empty() ? std::string("none registered") : fmt::format("{}", fmt::join(seen, ", ")));
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
    plan = plan_nodes(records, footprint_, options_.planner);
    spdlog::info("registry event=planned nodes={} reason=\"{} usable node(s)\"", plan.size(), online.size());
  } else {
    spdlog::info("registry event=planned nodes={} reason=\"re-using the saved plan: every node is back\"", plan.size());
  }
  {
    std::lock_guard lock(plan_mutex_);
    plan_ = plan;
  }
  load(plan);
  serve_ms_ = std::chrono::duration<double, std::milli>(Clock::now() - created_).count();
  spdlog::info("registry plan:\n{}", plan_table());
  spdlog::info("registry event=serving nodes={} ms={:.0f} reason=\"{}\"", plan.size(), serve_ms_,
               readopted_ ? "re-adopted the saved plan" : "new plan loaded");
}

void DynamicCluster::load(const std::vector<PlannedNode>& plan) {
  ClusterConfig c = config_;
  c.nodes_auto = false;
  c.nodes.clear();
  for (const auto& p : plan) {
    NodeConfig n;
    n.id = p.record.node_id;
    n.host = p.record.host;
    n.port = p.record.port;
    n.layers = std::pair{p.first, p.last - 1};
    c.nodes.push_back(n);
    registry_->set_state(n.id, NodeState::kLoading, fmt::format("loading layers {}-{}", p.first, p.last - 1));
  }
  spdlog::info("registry event=load-prepare nodes={}", plan.size());
  try {
    cluster_ = std::make_unique<pipeline::Cluster>(c, options_.cluster);
  } catch (const std::exception& e) {
    for (const auto& p : plan) registry_->set_state(p.record.node_id, NodeState::kOnline, "load rolled back");
    spdlog::error("registry event=load-rolled-back reason=\"{}\"", e.what());
    throw;
  }
  for (const auto& p : plan) registry_->set_state(p.record.node_id, NodeState::kOnline, "load committed");
  spdlog::info("registry event=load-committed nodes={}", plan.size());
  SavedPlan saved{footprint_.model_identity, footprint_.n_ctx, footprint_.max_sequences, {}};
  for (const auto& p : plan) saved.ranges.push_back({p.record.node_id, p.first, p.last});
  registry_->set_plan(saved);
  loaded_ = true;
}

bool DynamicCluster::replan_wanted() const {
  const auto plan = this->plan();
  {
    std::lock_guard lock(plan_mutex_);
    if (!broken_.empty()) return true;
  }
  for (const auto& e : registry_->entries()) {
    const bool planned =
        std::any_of(plan.begin(), plan.end(), [&](const PlannedNode& p) { return p.record.node_id == e.record.node_id; });
    if (planned && e.state == NodeState::kOffline) return true;
    if (!planned && usable(e, footprint_.model_identity)) return true;
  }
  return false;
}

bool DynamicCluster::replan() {
  std::vector<NodeRecord> records;
  for (const auto& e : registry_->entries())
    if (usable(e, footprint_.model_identity)) records.push_back(e.record);
  auto next = plan_nodes(records, footprint_, options_.planner);
  const auto current = plan();
  std::string broken;
  {
    std::lock_guard lock(plan_mutex_);
    broken = broken_;
  }
  auto same = [&] {
    if (next.size() != current.size()) return false;
    for (size_t i = 0; i < next.size(); ++i)
      if (next[i].record.node_id != current[i].record.node_id || next[i].first != current[i].first ||
          next[i].last != current[i].last)
        return false;
    return true;
  };
  if (same() && broken.empty() && loaded_) return false;
  std::vector<std::string> kept;
  for (const auto& n : next)
    for (const auto& c : current)
      if (n.record.node_id == c.record.node_id && n.first == c.first && n.last == c.last) kept.push_back(n.record.node_id);
  spdlog::info("registry event=re-plan nodes={} reason=\"{} -> {} node(s); unchanged ranges (re-adopted, no reload): "
               "{}\"",
               next.size(), current.size(), next.size(), kept.empty() ? std::string("none") : fmt::format("{}", fmt::join(kept, ", ")));
  loaded_ = false;
  cluster_.reset();  // Goodbye on the old data connections; joined workers keep their layers
  {
    std::lock_guard lock(plan_mutex_);
    plan_ = next;
    broken_.clear();
  }
  load(next);
  return true;
}

pipeline::Cluster& DynamicCluster::cluster() {
  if (!cluster_) fail("the dynamic cluster is not loaded yet (start() first)");
  return *cluster_;
}

uint16_t DynamicCluster::control_port() const { return control_ ? control_->port() : 0; }

std::vector<PlannedNode> DynamicCluster::plan() const {
  std::lock_guard lock(plan_mutex_);
  return plan_;
}

std::string DynamicCluster::plan_table() const {
  return format_plan_table(plan(), fmt::format("{}:{}", config_.master_host, config_.master_port));
}

api::ClusterViewSnapshot DynamicCluster::snapshot() const {
  api::ClusterViewSnapshot s;
  s.n_layer = footprint_.n_layer;
  const auto plan = this->plan();
  const auto entries = registry_->entries();
  const auto now = Clock::now();
  api::NodeView coord;
  coord.id = "coordinator";
  coord.address = fmt::format("{}:{}", config_.master_host, config_.master_port);
  coord.status = "online";
  coord.role = "coordinator";
  s.nodes.push_back(coord);
  auto view_of = [&](const NodeEntry& e) {
    api::NodeView v;
    v.id = e.record.node_id;
    v.address = fmt::format("{}:{}", e.record.host, e.record.port);
    v.status = std::string(to_string(e.state));
    v.role = "worker";
    v.load = e.record.load;
    v.last_heartbeat_seconds = e.heard ? std::chrono::duration<double>(now - e.last_seen).count() : -1;
    v.memory_total_bytes = e.record.memory_total;
    return v;
  };
  std::vector<std::string> problems;
  for (const auto& p : plan) {
    auto it = std::find_if(entries.begin(), entries.end(), [&](const NodeEntry& e) { return e.record.node_id == p.record.node_id; });
    NodeEntry missing;
    missing.record = p.record;
    api::NodeView v = view_of(it != entries.end() ? *it : missing);
    v.first_layer = p.first;
    v.last_layer = p.last - 1;
    v.memory_used_bytes = p.bytes_needed;
    if (v.status != "online")
      problems.push_back(fmt::format("node {} (layers {}-{}) is {}{}", v.id, p.first, p.last - 1, v.status,
                                     it != entries.end() && !it->reason.empty() ? ": " + it->reason : ""));
    s.nodes.push_back(v);
  }
  for (const auto& e : entries)
    if (std::none_of(plan.begin(), plan.end(), [&](const PlannedNode& p) { return p.record.node_id == e.record.node_id; }))
      s.nodes.push_back(view_of(e));
  s.layers_covered = !plan.empty() && problems.empty();
  std::string broken;
  {
    std::lock_guard lock(plan_mutex_);
    broken = broken_;
  }
  s.ready = loaded_ && s.layers_covered && broken.empty();
  if (!loaded_)
    s.detail = plan.empty() ? fmt::format("waiting for workers to register ({} known)", entries.size())
                            : "loading the planned layers";
  else if (!problems.empty())
    s.detail = fmt::format("{}", fmt::join(problems, "; "));
  else if (!broken.empty())
    s.detail = broken;
  return s;
}

}  // namespace baton::registry
