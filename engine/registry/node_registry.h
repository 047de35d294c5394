// The coordinator's live picture of its nodes (the embedded registry): who registered, whether
// each is online, loading or offline and why, when it was last heard from, and the layer plan
// currently assigned. Persisted to a JSON file on every membership change so that a restarted
// coordinator knows its nodes (they come back as offline "recovered" entries until they
// re-register) and the plan they were serving (so it can re-adopt them without reloading).
//
// Every event is one structured log line:
//   registry event=<registered|re-registered|heartbeat-missed|offline|deregistered|...> node=<id> ... reason="..."
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/cluster/stage_assignment.h"
#include "engine/registry/registry_backend.h"

namespace baton::registry {

enum class NodeState { kOnline, kLoading, kOffline };
std::string_view to_string(NodeState state);  // "online", "loading", "offline"

struct NodeEntry {
  NodeRecord record;
  NodeState state = NodeState::kOffline;
  std::string reason;                               // the last state change, in words
  std::chrono::steady_clock::time_point last_seen;  // last Register/Heartbeat (valid if heard)
  bool heard = false;     // heard from since this registry started (false: recovered from the file)
  bool departed = false;  // deregistered itself (SIGTERM); kept for the view, not persisted
  bool missed_logged = false;
  uint64_t connection = 0;  // the control connection it registered on (0: none / backend)
};

// One node's share of a plan, as persisted.
struct PlanRange {
  std::string node_id;
  LayerSpan layers;
  bool operator==(const PlanRange&) const = default;
};

struct SavedPlan {
  std::string model_identity;
  int64_t n_ctx = 0;
  int max_sequences = 1;
  std::vector<PlanRange> ranges;  // pipeline order
  bool operator==(const SavedPlan&) const = default;
};

struct NodeRegistryOptions {
  std::chrono::milliseconds heartbeat_timeout{3000};  // silent this long -> offline
  std::string persist_path;                           // "" = not persisted
  int64_t n_layer = 0;  // the model's layers: records claiming others are refused (0: unknown)
  // A node counts as having missed heartbeats once silent this long (0: two thirds of the
  // timeout, i.e. two intervals of a worker's default 1 s against the default 3 s timeout; a third
  // equalled the interval and logged every late heartbeat: issue 29, 281-520 lines at 39 nodes).
  std::chrono::milliseconds missed_after{0};
  // heartbeat-missed / heartbeat-resumed are aggregated: at most one line of each per interval,
  // naming the nodes (the first one after a quiet interval is logged at once).
  std::chrono::milliseconds heartbeat_log_interval{5000};
};

class NodeRegistry {
 public:
  // Loads persist_path when it exists (nodes come back offline, "recovered from <file>").
  // Throws baton::Error naming the file and field when it exists but cannot be parsed.
  explicit NodeRegistry(NodeRegistryOptions options);

  // A Register (or a Heartbeat from a node not known yet). Marks it online unless it is
  // loading. `connection` identifies the control connection (0 for a registry backend).
  // register_node() and heartbeat() throw baton::Error naming the field of a record that fails
  // check_node_record() (node_record_check.h); it is then neither listed nor persisted.
  // sync_from_backend() and the file skip such records with a warning.
  void register_node(const NodeRecord& record, uint64_t connection);
  // Refreshes last_seen and the record's load/memory; an offline node comes back online.
  void heartbeat(const NodeRecord& record, uint64_t connection);
  // The node deregistered itself (Goodbye): offline at once, departed.
  void deregister(const std::string& node_id, const std::string& reason);
  // Its control connection `connection` ended (ignored if it re-registered on another one).
  void connection_lost(const std::string& node_id, uint64_t connection, const std::string& reason);
  // Marks silent nodes offline (timeout) and notes a missed heartbeat once per silence after
  // `missed_after` (logged aggregated, see heartbeat_log_interval). Returns the ids that went offline.
  std::vector<std::string> sweep(std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());
  // The coordinator's load transitions: online <-> loading. Ignored for offline nodes.
  void set_state(const std::string& node_id, NodeState state, const std::string& reason);
  // Replaces the whole set with what a backend (etcd) lists: new ids register, missing ones go offline.
  void sync_from_backend(const std::vector<NodeRecord>& live);

  std::vector<NodeEntry> entries() const;  // by node id
  std::optional<NodeEntry> find(const std::string& node_id) const;
  // Bumped on every change of a node's state or record set (not on plain heartbeats).
  uint64_t version() const;
  // Waits until version() != seen or `timeout`; returns version().
  uint64_t wait_for_change(uint64_t seen, std::chrono::milliseconds timeout) const;

  void set_plan(const SavedPlan& plan);  // persisted
  std::optional<SavedPlan> plan() const;

  const NodeRegistryOptions& options() const { return options_; }

 private:
  void changed_locked(bool persist);
  void save_locked() const;
  void load_file();
  void log_event(const char* event, const NodeEntry& e, const std::string& reason) const;
  // One line per kind for the nodes noted since the last one, unless that was < the interval ago.
  void flush_heartbeat_log_locked(std::chrono::steady_clock::time_point now);

  NodeRegistryOptions options_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::map<std::string, NodeEntry> nodes_;
  std::optional<SavedPlan> plan_;
  uint64_t version_ = 1;
  std::vector<std::string> pending_missed_, pending_resumed_;  // not logged yet
  std::chrono::steady_clock::time_point last_heartbeat_log_{};
};

}  // namespace baton::registry
