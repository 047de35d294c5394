#include "engine/registry/node_registry.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/base/error.h"
#include "engine/cluster/config_limits.h"
#include "engine/registry/node_record_check.h"
#include "engine/registry/node_record_json.h"

namespace baton::registry {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

std::string_view to_string(NodeState state) {
  switch (state) {
    case NodeState::kOnline: return "online";
    case NodeState::kLoading: return "loading";
    case NodeState::kOffline: return "offline";
  }
  return "offline";
}

NodeRegistry::NodeRegistry(NodeRegistryOptions options) : options_(std::move(options)) {
  if (!options_.persist_path.empty() && std::filesystem::exists(options_.persist_path)) load_file();
}

void NodeRegistry::log_event(const char* event, const NodeEntry& e, const std::string& reason) const {
  spdlog::info("registry event={} node={} address={}:{} state={} reason=\"{}\"", event, e.record.node_id, e.record.host,
               e.record.port, to_string(e.state), reason);
}

void NodeRegistry::flush_heartbeat_log_locked(Clock::time_point now) {
  if (pending_missed_.empty() && pending_resumed_.empty()) return;
  if (last_heartbeat_log_ != Clock::time_point{} && now - last_heartbeat_log_ < options_.heartbeat_log_interval) return;
  last_heartbeat_log_ = now;
  auto names = [](std::vector<std::string>& ids) {  // at most 8 ids, then a count
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    std::string out;
    for (size_t i = 0; i < ids.size() && i < 8; ++i) out += (i ? "," : "") + ids[i];
    if (ids.size() > 8) out += fmt::format(",+{} more", ids.size() - 8);
    return out;
  };
  const auto missed_after =
      options_.missed_after.count() > 0 ? options_.missed_after : options_.heartbeat_timeout * 2 / 3;
  if (!pending_missed_.empty()) {
    const std::string ids = names(pending_missed_);
    spdlog::info(
        "registry event=heartbeat-missed count={} nodes={} reason=\"silent for more than {} ms (offline after {} "
        "ms)\"",
        pending_missed_.size(), ids, missed_after.count(), options_.heartbeat_timeout.count());
  }
  if (!pending_resumed_.empty()) {
    const std::string ids = names(pending_resumed_);
    spdlog::info("registry event=heartbeat-resumed count={} nodes={} reason=\"heard again\"", pending_resumed_.size(),
                 ids);
  }
  pending_missed_.clear();
  pending_resumed_.clear();
}

void NodeRegistry::changed_locked(bool persist) {
  ++version_;
  if (persist) save_locked();
  changed_.notify_all();
}

void NodeRegistry::register_node(const NodeRecord& record, uint64_t connection) {
  check_node_record(record, options_.n_layer, "registration");
  std::lock_guard lock(mutex_);
  auto [it, fresh] = nodes_.try_emplace(record.node_id);
  NodeEntry& e = it->second;
  const char* event = fresh ? "registered" : "re-registered";
  const bool moved = !fresh && (e.record.host != record.host || e.record.port != record.port);
  // A load in progress was for the old process: the coordinator re-plans at the new address.
  if (moved && e.state == NodeState::kLoading) e.state = NodeState::kOnline;
  if (moved)
    log_event("address-changed", e,
              fmt::format("now at {}:{} (was {}:{})", record.host, record.port, e.record.host, e.record.port));
  e.record = record;
  e.connection = connection;
  e.last_seen = Clock::now();
  e.heard = true;
  e.departed = false;
  e.missed_logged = false;
  if (e.state != NodeState::kLoading) e.state = NodeState::kOnline;
  e.reason = fmt::format(
      "{} (layers {}, {:.1f} GB free, {:.1f} GFLOP/s)", event,
      record.layers.empty() ? std::string("none") : fmt::format("{}-{}", record.layers[0].first, record.layers[0].last),
      static_cast<double>(record.memory_free) / 1e9, static_cast<double>(record.speed));
  log_event(event, e, e.reason);
  changed_locked(true);
}

void NodeRegistry::heartbeat(const NodeRecord& record, uint64_t connection) {
  check_node_record(record, options_.n_layer, "heartbeat");
  std::unique_lock lock(mutex_);
  auto it = nodes_.find(record.node_id);
  if (it == nodes_.end() || !it->second.heard || it->second.departed) {
    lock.unlock();
    register_node(record, connection);
    return;
  }
  NodeEntry& e = it->second;
  if (e.record.host != record.host || e.record.port != record.port ||
      e.record.model_identity != record.model_identity) {
    // Another process under this id (a worker restarted on a new port, e.g. before its etcd
    // lease expired): its record replaces the old one, address included.
    lock.unlock();
    register_node(record, connection);
    return;
  }
  e.last_seen = Clock::now();
  e.record.load = record.load;
  e.record.memory_free = record.memory_free;
  e.record.readings = record.readings;  // the machine's latest figures (node_readings.h)
  e.connection = connection;
  if (e.missed_logged) {
    e.missed_logged = false;
    pending_resumed_.push_back(e.record.node_id);
    flush_heartbeat_log_locked(e.last_seen);
  }
  if (e.state == NodeState::kOffline) {
    e.state = NodeState::kOnline;
    e.reason = "heartbeats resumed";
    log_event("online", e, e.reason);
    changed_locked(true);
  }
}

void NodeRegistry::deregister(const std::string& node_id, const std::string& reason) {
  std::lock_guard lock(mutex_);
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) return;
  NodeEntry& e = it->second;
  e.state = NodeState::kOffline;
  e.departed = true;
  e.reason = "deregistered: " + reason;
  log_event("deregistered", e, reason);
  changed_locked(true);
}

void NodeRegistry::connection_lost(const std::string& node_id, uint64_t connection, const std::string& reason) {
  std::lock_guard lock(mutex_);
  auto it = nodes_.find(node_id);
  if (it == nodes_.end() || it->second.connection != connection || it->second.state == NodeState::kOffline) return;
  NodeEntry& e = it->second;
  e.state = NodeState::kOffline;
  e.reason = "control connection lost: " + reason;
  log_event("offline", e, e.reason);
  changed_locked(true);
}

std::vector<std::string> NodeRegistry::sweep(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  std::vector<std::string> gone;
  const auto timeout = options_.heartbeat_timeout;
  const auto missed_after = options_.missed_after.count() > 0 ? options_.missed_after : timeout * 2 / 3;
  for (auto& [id, e] : nodes_) {
    if (e.state == NodeState::kOffline || !e.heard) continue;
    const auto silent = now - e.last_seen;
    if (silent > timeout) {
      e.state = NodeState::kOffline;
      e.reason = fmt::format("no heartbeat for {} ms (timeout {} ms)",
                             std::chrono::duration_cast<std::chrono::milliseconds>(silent).count(), timeout.count());
      log_event("offline", e, e.reason);
      gone.push_back(id);
    } else if (silent > missed_after && !e.missed_logged) {
      e.missed_logged = true;
      pending_missed_.push_back(id);
    }
  }
  flush_heartbeat_log_locked(now);
  if (!gone.empty()) changed_locked(true);
  return gone;
}

void NodeRegistry::set_state(const std::string& node_id, NodeState state, const std::string& reason) {
  std::lock_guard lock(mutex_);
  auto it = nodes_.find(node_id);
  if (it == nodes_.end() || it->second.state == NodeState::kOffline || it->second.state == state) return;
  it->second.state = state;
  it->second.reason = reason;
  // Debug only: a load moves every planned node through loading -> online (74 lines per re-plan
  // at 37 nodes, issue 29), and the load's own lines (load-prepare, load-committed, the re-plan's
  // kept and reloaded ranges, the plan table) already say it once.
  const auto& e = it->second;
  spdlog::debug("registry event={} node={} address={}:{} state={} reason=\"{}\"",
                state == NodeState::kLoading ? "loading" : "online", e.record.node_id, e.record.host, e.record.port,
                to_string(e.state), reason);
  changed_locked(false);
}

void NodeRegistry::sync_from_backend(const std::vector<NodeRecord>& live) {
  std::map<std::string, const NodeRecord*> by_id;
  for (const auto& r : live) by_id[r.node_id] = &r;
  std::vector<std::string> refused;
  for (const auto& [id, r] : by_id) {
    try {
      heartbeat(*r, 0);
    } catch (const Error& e) {  // not listed: as if it had not registered
      spdlog::warn("registry event=refused node={} reason=\"{}\"", printable(id), e.what());
      refused.push_back(id);
    }
  }
  for (const auto& id : refused) by_id.erase(id);
  std::lock_guard lock(mutex_);
  bool any = false;
  for (auto& [id, e] : nodes_) {
    if (by_id.count(id) || e.state == NodeState::kOffline) continue;
    e.state = NodeState::kOffline;
    e.reason = "its registry entry expired or was withdrawn";
    log_event("offline", e, e.reason);
    any = true;
  }
  if (any) changed_locked(true);
}

std::vector<NodeEntry> NodeRegistry::entries() const {
  std::lock_guard lock(mutex_);
  std::vector<NodeEntry> out;
  for (const auto& [id, e] : nodes_) out.push_back(e);
  return out;
}

std::optional<NodeEntry> NodeRegistry::find(const std::string& node_id) const {
  std::lock_guard lock(mutex_);
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) return std::nullopt;
  return it->second;
}

uint64_t NodeRegistry::version() const {
  std::lock_guard lock(mutex_);
  return version_;
}

uint64_t NodeRegistry::wait_for_change(uint64_t seen, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return version_ != seen; });
  return version_;
}

void NodeRegistry::set_plan(const SavedPlan& plan) {
  std::lock_guard lock(mutex_);
  plan_ = plan;
  spdlog::info("registry event=plan-saved nodes={} model={} n_ctx={} slots={}", plan.ranges.size(), plan.model_identity,
               plan.n_ctx, plan.max_sequences);
  changed_locked(true);
}

std::optional<SavedPlan> NodeRegistry::plan() const {
  std::lock_guard lock(mutex_);
  return plan_;
}

// File format: {"format": "baton-registry-v1", "nodes": [NodeRecord...], "plan": null |
// {"model_identity", "n_ctx", "max_sequences", "ranges": [{"node_id", "first", "last"}]}}
// (plan ranges: a LayerSpan's [begin, end) as "first" and "last"; the file format predates LayerSpan).
void NodeRegistry::save_locked() const {
  if (options_.persist_path.empty()) return;
  json doc;
  doc["format"] = "baton-registry-v1";
  doc["nodes"] = json::array();
  for (const auto& [id, e] : nodes_)
    if (!e.departed) doc["nodes"].push_back(node_record_to_json(e.record));
  if (plan_) {
    json p;
    p["model_identity"] = plan_->model_identity;
    p["n_ctx"] = plan_->n_ctx;
    p["max_sequences"] = plan_->max_sequences;
    p["ranges"] = json::array();
    for (const auto& r : plan_->ranges)
      p["ranges"].push_back({{"node_id", r.node_id}, {"first", r.layers.begin}, {"last", r.layers.end}});
    doc["plan"] = p;
  } else {
    doc["plan"] = nullptr;
  }
  const std::string tmp = options_.persist_path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << doc.dump(2) << "\n";
    if (!out) {
      spdlog::error("registry: cannot write {}", tmp);
      return;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, options_.persist_path, ec);
  if (ec) spdlog::error("registry: cannot replace {}: {}", options_.persist_path, ec.message());
}

void NodeRegistry::load_file() {
  const std::string& path = options_.persist_path;
  std::ifstream in(path);
  if (!in) fail("registry file {}: cannot read it", path);
  std::stringstream text;
  text << in.rdbuf();
  json doc;
  try {
    doc = json::parse(text.str());
  } catch (const json::exception& e) {  // parse errors and numbers beyond double's range
    fail<FormatError>("registry file {}: invalid JSON: {}", path, e.what());
  }
  if (!doc.is_object() || doc.value("format", "") != "baton-registry-v1")
    fail<FormatError>("registry file {}: expected an object with \"format\": \"baton-registry-v1\"", path);
  if (!doc.contains("nodes") || !doc["nodes"].is_array())
    fail<FormatError>("registry file {}: \"nodes\" must be an array", path);
  for (size_t i = 0; i < doc["nodes"].size(); ++i) {
    NodeEntry e;
    const std::string where = fmt::format("registry file {}, nodes[{}]", path, i);
    e.record = node_record_from_json(doc["nodes"][i], where);
    try {
      check_node_record(e.record, options_.n_layer, where);
    } catch (const Error& ex) {
      spdlog::warn("registry: skipping a record: {}", ex.what());
      continue;
    }
    e.state = NodeState::kOffline;
    e.reason = fmt::format("recovered from {}; waiting for it to re-register", path);
    nodes_[e.record.node_id] = e;
  }
  if (doc.contains("plan") && doc["plan"].is_object()) {
    const json& p = doc["plan"];
    try {
      SavedPlan plan;
      plan.model_identity = p.at("model_identity").get<std::string>();
      plan.n_ctx = p.at("n_ctx").get<int64_t>();
      plan.max_sequences = p.at("max_sequences").get<int>();
      for (const auto& r : p.at("ranges"))
        plan.ranges.push_back(
            {r.at("node_id").get<std::string>(), {r.at("first").get<int64_t>(), r.at("last").get<int64_t>()}});
      plan_ = plan;
    } catch (const json::exception& e) {
      fail<FormatError>("registry file {}: \"plan\" is malformed: {}", path, e.what());
    }
  }
  spdlog::info("registry event=recovered file={} nodes={} plan={}", path, nodes_.size(), plan_ ? "yes" : "no");
}

}  // namespace baton::registry
