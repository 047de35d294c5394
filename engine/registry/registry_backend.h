// Where nodes announce themselves and where the coordinator finds them: the shared contract of
// the etcd backend (engine/registry/etcd_*) and of the embedded registry in the coordinator.
// A record is the wire's NodeStatus (id, address, memory, threads, ISA, servable layers, model
// identity, measured speed). Entries live as long as their owner keeps them alive.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "net/messages.h"

namespace baton::registry {

using NodeRecord = net::NodeStatus;

class RegistryBackend {
 public:
  virtual ~RegistryBackend() = default;

  // --- a worker's side ---
  // Creates or replaces this node's entry, bound to a lease of `ttl`: it disappears `ttl`
  // after the last announce()/keep_alive() unless refreshed.
  virtual void announce(const NodeRecord& node, std::chrono::seconds ttl) = 0;
  // Refreshes the lease of the announced entry (call every ttl/3). Throws baton::Error when
  // the entry is gone (then announce() again).
  virtual void keep_alive() = 0;
  // Rewrites the announced entry with a fresher record (free memory, load) under the same
  // lease. Throws baton::Error when nothing is announced or the lease is gone (announce again).
  virtual void update(const NodeRecord& node) = 0;
  // Deletes this node's entry at once (clean shutdown). No-op if never announced.
  virtual void withdraw() = 0;

  // --- the coordinator's side ---
  // Every live entry, ordered by node id.
  virtual std::vector<NodeRecord> list() = 0;
  // Blocks up to `wait` for a change under the prefix; the full current list after a change,
  // nullopt on timeout.
  virtual std::optional<std::vector<NodeRecord>> wait_for_change(std::chrono::milliseconds wait) = 0;
};

}  // namespace baton::registry
