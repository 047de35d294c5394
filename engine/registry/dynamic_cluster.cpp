#include "engine/registry/dynamic_cluster.h"

#include <spdlog/spdlog.h>

#include <fmt/ranges.h>

#include <map>

#include "engine/base/error.h"
#include "engine/model/stage.h"
#include "engine/pipeline/load_progress.h"
#include "engine/registry/etcd_registry.h"
#include "engine/runtime/local_model.h"
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

// A planned node that registered again at another address (a worker restarted on a new port):
// the loaded pipeline's link is to the old process, so the node counts as lost until a re-plan
// loads it at the new address. "" when the addresses agree.
std::string moved_since_planned(const PlannedStage& p, const NodeEntry& e) {
  if (e.record.host == p.record.host && e.record.port == p.record.port) return {};
  return fmt::format("re-registered at {}:{}, the loaded pipeline uses {}:{}", e.record.host, e.record.port,
                     p.record.host, p.record.port);
}

}  // namespace

DynamicCluster::DynamicCluster(const ClusterConfig& config, DynamicClusterOptions options)
    : config_(config), options_(std::move(options)), created_(Clock::now()) {
  if (!config_.nodes_auto) fail("{}: a dynamic cluster needs `nodes: auto`", config_.source);
  file_ = gguf::GgufFile::open(config_.model);
  footprint_ = ModelFootprint::from_file(*file_, options_.cluster.n_ctx, options_.cluster.max_sequences);
  model_config_ = ModelConfig::from_metadata(file_->metadata());
  tokenizer_ = tokenizer::Tokenizer::from_metadata(file_->metadata());
  const int threads = options_.cluster.threads;
  pool_ = std::make_unique<kernels::ThreadPool>(threads > 0 ? threads : default_thread_count());
  head_ = std::make_unique<ModelHead>(file_, model_config_, *pool_);
  n_ctx_ = effective_n_ctx(model_config_, options_.cluster.n_ctx);
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
  options_.cluster.threads = 1;  // each pipeline's own head is not what serves: head() is
  // Every pipeline of this coordinator is one holder to the workers (a re-plan is no take-over).
  if (options_.cluster.coordinator_id.empty()) options_.cluster.coordinator_id = pipeline::default_coordinator_id();
  NodeRegistryOptions ro;
  ro.heartbeat_timeout = seconds_ms(config_.heartbeat_timeout_s);
  ro.persist_path = config_.registry_file;
  ro.n_layer = footprint_.n_layer;
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
            broken_ = fmt::format("node {} (layers {}) went offline ({}); the loaded pipeline is broken until "
                                  "the coordinator re-plans",
                                  p.record.node_id, to_string(p.stage.layers), why);
        }
        // A silent node (frozen, or cut off without a FIN) keeps its connection open: fail the
        // passes waiting on it now, so the scheduler's repair re-plans instead of waiting out
        // the pipeline's request timeout.
        std::lock_guard lock(cluster_mutex_);
        if (cluster_) cluster_->abandon_node(p.record.node_id, fmt::format("node {} went offline ({})", p.record.node_id,
                                                                           why));
      }
      if (now == NodeState::kOffline && it->second != NodeState::kOffline)
        spdlog::warn("registry event=re-plan node={} reason=\"planned node (layers {}) offline: {}; cluster not "
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
    if (std::none_of(present.begin(), present.end(), [&](const NodeRecord& r) { return r.node_id == p.record.node_id; }))
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
  if (progress)
    progress->begin("joining", static_cast<size_t>(config_.min_nodes), seconds_ms(config_.join_timeout_s));
  while (true) {
    std::vector<NodeEntry> online;
    for (const auto& e : registry_->entries())
      if (usable(e, footprint_.model_identity)) online.push_back(e);
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
        if (have_saved) spdlog::warn("registry: the saved plan's nodes did not all return within {} s; planning anew",
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
  ClusterConfig c = config_;
  c.nodes_auto = false;
  c.nodes.clear();
  for (const auto& p : plan) {
    NodeConfig n;
    n.id = p.record.node_id;
    n.host = p.record.host;
    n.port = p.record.port;
    n.layers = p.stage.layers;
    c.nodes.push_back(n);
    registry_->set_state(n.id, NodeState::kLoading, fmt::format("loading layers {}", to_string(p.stage.layers)));
  }
  spdlog::info("registry event=load-prepare nodes={}", plan.size());
  std::unique_ptr<pipeline::Cluster> fresh;
  try {
    fresh = std::make_unique<pipeline::Cluster>(c, options_.cluster);
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

bool DynamicCluster::untracked(const std::string& node_id) const {
  return std::any_of(pinned_.begin(), pinned_.end(), [&](const PlannedStage& p) { return p.record.node_id == node_id; }) &&
         !registry_->find(node_id);
}

std::vector<PlannedStage> DynamicCluster::pinned_with(const std::vector<NodeRecord>& records) const {
  std::vector<PlannedStage> pins = pinned_;
  for (auto& p : pins)
    for (const auto& r : records)
      if (r.node_id == p.record.node_id) p = planned_stage(r, p.stage.layers, p.bytes_needed);
  return pins;
}

std::vector<PlannedStage> DynamicCluster::plan_over(const std::vector<NodeRecord>& records) const {
  return plan_around(pinned_with(records), records, footprint_, options_.planner);
}

std::vector<NodeRecord> DynamicCluster::usable_records() const {
  std::vector<NodeRecord> records;
  for (const auto& e : registry_->entries())
    if (usable(e, footprint_.model_identity)) records.push_back(e.record);
  return records;
}

void DynamicCluster::set_replan_error(const std::string& error) {
  std::lock_guard lock(plan_mutex_);
  replan_error_ = error;
}

bool DynamicCluster::lost_planned_node() const {
  if (!loaded_) return true;
  {
    std::lock_guard lock(plan_mutex_);
    if (!broken_.empty()) return true;
  }
  for (const auto& p : plan()) {
    auto e = registry_->find(p.record.node_id);
    if (!e && untracked(p.record.node_id)) continue;
    if (!e || e->state == NodeState::kOffline || !moved_since_planned(p, *e).empty()) return true;
  }
  return false;
}

bool DynamicCluster::replan_wanted() const {
  if (lost_planned_node()) return true;
  return !newcomers(usable_records()).empty();
}

std::vector<std::string> DynamicCluster::newcomers(const std::vector<NodeRecord>& records) const {
  std::lock_guard lock(plan_mutex_);
  std::vector<std::string> out;
  for (const auto& r : records)
    if (!considered_.count(r.node_id) &&
        std::none_of(plan_.begin(), plan_.end(), [&](const PlannedStage& p) { return p.record.node_id == r.node_id; }))
      out.push_back(r.node_id);
  return out;
}

bool DynamicCluster::replan() {
  const auto current = plan();
  const bool lost = lost_planned_node();
  // What went wrong with the current pipeline, naming the nodes (for the error and the log).
  std::vector<std::string> gone;
  for (const auto& p : current) {
    auto e = registry_->find(p.record.node_id);
    if (!e && untracked(p.record.node_id)) continue;
    if (!e || e->state == NodeState::kOffline)
      gone.push_back(fmt::format("node {} (layers {}) is offline{}", p.record.node_id, to_string(p.stage.layers),
                                 e && !e->reason.empty() ? " (" + e->reason + ")" : ""));
    else if (const std::string moved = moved_since_planned(p, *e); !moved.empty())
      gone.push_back(fmt::format("node {} (layers {}) {}", p.record.node_id, to_string(p.stage.layers), moved));
  }
  const auto records = usable_records();
  const auto joined = newcomers(records);
  if (!lost && joined.empty()) {  // nothing new: keep the plan (a spare a minimal re-plan left out stays out)
    tell_servable("");
    set_replan_error("");
    return false;
  }
  std::vector<PlannedStage> next;
  try {
    // A loss moves as few layers as possible; a join (with nothing lost) re-balances.
    next = lost && !current.empty() ? plan_keeping(current, pinned_with(records), records, footprint_, options_.planner)
                                    : plan_over(records);
    std::lock_guard lock(plan_mutex_);
    considered_.clear();
    for (const auto& r : records) considered_.insert(r.node_id);
  } catch (const std::exception& e) {
    const std::string why = fmt::format("re-planning over the {} usable online node(s) failed: {}", records.size(), e.what());
    const std::string refusal = gone.empty() ? why : fmt::format("{}; {}", fmt::join(gone, "; "), why);
    if (lost) tell_servable(refusal);  // before snapshot() shows replan_error_
    std::string previous;
    {
      std::lock_guard lock(plan_mutex_);
      previous = std::exchange(replan_error_, why);
    }
    if (previous != why) spdlog::error("registry event=re-plan-failed reason=\"{}\"", why);
    fail("{}", refusal);
  }
  auto same = [&] {
    if (next.size() != current.size()) return false;
    for (size_t i = 0; i < next.size(); ++i)
      if (next[i].record.node_id != current[i].record.node_id || next[i].stage.layers != current[i].stage.layers)
        return false;
    return true;
  };
  if (same() && !lost) {
    tell_servable("");
    set_replan_error("");
    return false;
  }
  std::vector<std::string> kept;
  for (const auto& n : next)
    for (const auto& c : current)
      if (n.record.node_id == c.record.node_id && n.stage.layers == c.stage.layers) kept.push_back(n.record.node_id);
  spdlog::info("registry event=re-plan nodes={} kept={} reloaded={} reason=\"{}{} -> {} node(s){}; unchanged ranges "
               "(re-adopted, no reload): {}\"",
               next.size(), kept.size(), count_reloaded(current, next),
               gone.empty() ? std::string() : fmt::format("{}; ", fmt::join(gone, "; ")), current.size(), next.size(),
               joined.empty() ? std::string() : fmt::format(", joined: {}", fmt::join(joined, ", ")),
               kept.empty() ? std::string("none") : fmt::format("{}", fmt::join(kept, ", ")));
  loaded_ = false;
  std::unique_ptr<pipeline::Cluster> old;
  {
    std::lock_guard lock(cluster_mutex_);
    old = std::move(cluster_);
  }
  old.reset();  // Goodbye on the old data connections; joined workers keep their layers
  {
    std::lock_guard lock(plan_mutex_);
    plan_ = next;
    broken_.clear();
  }
  load(next);
  set_replan_error("");
  return true;
}

bool DynamicCluster::recover(const std::string& error) {
  // The registry usually knows at once (a killed worker's control connection drops with its
  // data connection); a silent node takes the heartbeat timeout.
  const auto deadline = Clock::now() + seconds_ms(config_.heartbeat_timeout_s) + 1s;
  uint64_t seen = registry_->version();
  while (!lost_planned_node()) {
    if (Clock::now() >= deadline) return false;
    seen = registry_->wait_for_change(seen, 100ms);
  }
  spdlog::warn("registry event=re-plan reason=\"a forward pass failed ({}); re-planning over the nodes that remain\"",
               error);
  replan();
  return true;
}

void DynamicCluster::Runner::forward(const TokenBatch& batch, std::vector<float>& hidden, std::vector<float>& out_rows) {
  current().forward(batch, hidden, out_rows);
}

void DynamicCluster::Runner::reset_sequence(uint64_t seq_id) { current().reset_sequence(seq_id); }

int DynamicCluster::Runner::max_in_flight() const {
  return owner_.cluster_ ? owner_.cluster_->layers().max_in_flight() : 1;
}

void DynamicCluster::Runner::submit(const TokenBatch& batch, std::vector<float>& hidden) {
  current().submit(batch, hidden);
}

void DynamicCluster::Runner::finish(std::vector<float>& out_rows) { current().finish(out_rows); }

LayerRunner& DynamicCluster::Runner::current() const {
  if (!owner_.cluster_) {
    std::string why;
    {
      std::lock_guard lock(owner_.plan_mutex_);
      why = owner_.replan_error_;
    }
    fail("the cluster has no loaded pipeline: {}", why.empty() ? std::string("not started") : why);
  }
  return owner_.cluster_->layers();
}

std::vector<StageAssignment> DynamicCluster::node_plan() const {
  std::lock_guard lock(cluster_mutex_);
  return cluster_ ? cluster_->plan() : std::vector<StageAssignment>{};
}

std::optional<pipeline::ClusterMetrics> DynamicCluster::metrics() const {
  std::lock_guard lock(cluster_mutex_);
  if (!cluster_) return std::nullopt;
  return cluster_->metrics();
}

pipeline::Cluster& DynamicCluster::cluster() {
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
    v.reason = e.reason;
    v.role = "worker";
    v.load = e.record.load;
    v.last_heartbeat_seconds = e.heard ? std::chrono::duration<double>(now - e.last_seen).count() : -1;
    v.memory_total_bytes = e.record.memory_total;
    for (const auto& r : e.record.readings) v.readings[r.name] = r.value;
    return v;
  };
  std::vector<std::string> problems;
  for (const auto& p : plan) {
    auto it = std::find_if(entries.begin(), entries.end(), [&](const NodeEntry& e) { return e.record.node_id == p.record.node_id; });
    NodeEntry missing;
    missing.record = p.record;
    if (untracked(p.record.node_id)) {  // pinned, never registered: as good as its pipeline
      missing.state = loaded_ ? NodeState::kOnline : NodeState::kLoading;
      missing.reason = "listed with fixed layers (not registered)";
    }
    api::NodeView v = view_of(it != entries.end() ? *it : missing);
    v.first_layer = p.stage.layers.begin;
    v.last_layer = p.stage.layers.last();
    v.memory_used_bytes = p.bytes_needed;
    if (const std::string moved = it != entries.end() ? moved_since_planned(p, *it) : std::string(); !moved.empty())
      problems.push_back(fmt::format("node {} (layers {}) {}", v.id, to_string(p.stage.layers), moved));
    else if (v.status != "online")
      problems.push_back(fmt::format("node {} (layers {}) is {}{}", v.id, to_string(p.stage.layers), v.status,
                                     it != entries.end() && !it->reason.empty() ? ": " + it->reason : ""));
    s.nodes.push_back(v);
  }
  for (const auto& e : entries)
    if (std::none_of(plan.begin(), plan.end(), [&](const PlannedStage& p) { return p.record.node_id == e.record.node_id; }))
      s.nodes.push_back(view_of(e));
  s.layers_covered = !plan.empty() && problems.empty();
  std::string broken, replan_error;
  {
    std::lock_guard lock(plan_mutex_);
    broken = broken_;
    replan_error = replan_error_;
  }
  s.ready = loaded_ && s.layers_covered && broken.empty();
  if (!loaded_)
    s.detail = plan.empty() ? fmt::format("waiting for workers to register ({} known)", entries.size())
                            : replan_error.empty() ? "loading the planned layers" : replan_error;
  else if (!problems.empty())
    s.detail = fmt::format("{}", fmt::join(problems, "; "));
  else if (!broken.empty())
    s.detail = broken;
  if (!s.ready && loaded_ && !replan_error.empty()) s.detail += "; " + replan_error;
  return s;
}

}  // namespace baton::registry
