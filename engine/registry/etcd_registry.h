// The etcd registry backend: node records live under PREFIX/nodes/<node id> as JSON
// (node_record_json.h), each key bound to an etcd lease whose TTL is the entry's lifetime.
// A worker announces (grant lease + put), keeps the lease alive and withdraws (delete +
// revoke); the coordinator lists the prefix and waits for changes with etcd's watch API.
//
// wait_for_change() uses the gateway's streaming /v3/watch from the revision after the last
// list it returned, so changes between two calls are never missed; it blocks in one HTTP
// read whose timeout is the wait.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "engine/registry/etcd_client.h"
#include "engine/registry/registry_backend.h"

namespace baton::registry {

// Thread-safety: the worker-side calls (announce, keep_alive, withdraw) share a mutex; the
// coordinator-side calls (list, wait_for_change) share another, so a watch in progress does
// not block a heartbeat. One instance is normally used for one side only.
class EtcdRegistry : public RegistryBackend {
 public:
  explicit EtcdRegistry(const EtcdUrl& url, EtcdClient::Options options = {});
  // parse_etcd_url(url), then the constructor above.
  static std::unique_ptr<EtcdRegistry> open(std::string_view url, EtcdClient::Options options = {});
  ~EtcdRegistry() override = default;

  // Node ids become key names: 1..256 bytes of [A-Za-z0-9._-], else baton::Error. Replacing
  // an earlier announce of this instance revokes its old lease. ttl must be >= 1 s.
  void announce(const NodeRecord& node, std::chrono::seconds ttl) override;
  // Throws baton::Error if nothing was announced, the lease expired or the key was deleted.
  void keep_alive() override;
  // A put of the record under the current lease; its node id must be the announced one.
  void update(const NodeRecord& node) override;
  void withdraw() override;

  // Entries whose value is not a valid record, or whose record's node_id differs from the
  // key, are skipped with a warning in the log (one bad writer must not hide every node).
  std::vector<NodeRecord> list() override;
  std::optional<std::vector<NodeRecord>> wait_for_change(std::chrono::milliseconds wait) override;

  // PREFIX/nodes/ ; the key of a node is nodes_prefix() + node_id.
  const std::string& nodes_prefix() const { return nodes_prefix_; }

 private:
  std::vector<NodeRecord> list_locked();

  EtcdClient client_;
  std::string nodes_prefix_;

  std::mutex worker_mutex_;
  std::string key_;  // the announced key; empty when not announced
  int64_t lease_ = 0;

  std::mutex coordinator_mutex_;
  int64_t seen_revision_ = 0;  // store revision of the last list returned; 0 before any
};

}  // namespace baton::registry
