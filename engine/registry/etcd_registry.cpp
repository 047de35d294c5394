// RegistryBackend over etcd: leases for lifetimes, a prefix for the node list, watch for changes.
#include "engine/registry/etcd_registry.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

#include "engine/base/error.h"
#include "engine/registry/node_record_json.h"

namespace baton::registry {
namespace {

void check_node_id(std::string_view id) {
  if (id.empty() || id.size() > net::kMaxNameBytes)
    fail("etcd registry: node id '{}' must have 1..{} bytes", id, net::kMaxNameBytes);
  for (char c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
      fail("etcd registry: node id '{}' has a character other than [A-Za-z0-9._-]", id);
}

}  // namespace

EtcdRegistry::EtcdRegistry(const EtcdUrl& url, EtcdClient::Options options)
    : client_(url.host, url.port, options), nodes_prefix_(url.prefix + "/nodes/") {}

std::unique_ptr<EtcdRegistry> EtcdRegistry::open(std::string_view url, EtcdClient::Options options) {
  return std::make_unique<EtcdRegistry>(parse_etcd_url(url), options);
}

void EtcdRegistry::announce(const NodeRecord& node, std::chrono::seconds ttl) {
  check_node_id(node.node_id);
  if (ttl.count() < 1)
    fail("etcd registry: announce of '{}' with ttl {} s, expected >= 1 s", node.node_id, ttl.count());
  std::string value = node_record_to_text(node);
  std::lock_guard lock(worker_mutex_);
  int64_t lease = client_.grant_lease(ttl);
  std::string key = nodes_prefix_ + node.node_id;
  try {
    client_.put(key, value, lease);
  } catch (...) {
    try {
      client_.revoke_lease(lease);
    } catch (const Error&) {  // the put's error is the one to report
    }
    throw;
  }
  int64_t old_lease = lease_;
  std::string old_key = std::exchange(key_, key);
  lease_ = lease;
  if (old_lease != 0) {
    // The old lease may still carry the old key (a different node id): revoking deletes it.
    try {
      client_.revoke_lease(old_lease);
    } catch (const Error& e) {
      spdlog::warn("etcd registry: could not revoke the previous lease of {}: {}", old_key, e.what());
    }
  }
}

void EtcdRegistry::keep_alive() {
  std::lock_guard lock(worker_mutex_);
  if (key_.empty()) fail("etcd registry: keep_alive() before announce()");
  if (client_.keep_alive_lease(lease_) == 0)
    fail("etcd registry: the lease of {} at {} expired; announce again", key_, client_.base_url());
  if (client_.range_key(key_).kvs.empty())
    fail("etcd registry: {} was deleted from {}; announce again", key_, client_.base_url());
}

void EtcdRegistry::update(const NodeRecord& node) {
  std::string value = node_record_to_text(node);
  std::lock_guard lock(worker_mutex_);
  if (key_.empty()) fail("etcd registry: update() before announce()");
  if (key_ != nodes_prefix_ + node.node_id)
    fail("etcd registry: update() of node '{}' but {} was announced", node.node_id, key_);
  client_.put(key_, value, lease_);  // fails (lease not found) when the lease expired
}

void EtcdRegistry::withdraw() {
  std::lock_guard lock(worker_mutex_);
  if (key_.empty()) return;
  client_.delete_key(key_);
  client_.revoke_lease(lease_);  // false when it had expired already: nothing left to do
  key_.clear();
  lease_ = 0;
}

std::vector<NodeRecord> EtcdRegistry::list() {
  std::lock_guard lock(coordinator_mutex_);
  return list_locked();
}

std::vector<NodeRecord> EtcdRegistry::list_locked() {
  EtcdRangeResult range = client_.range_prefix(nodes_prefix_);
  std::vector<NodeRecord> nodes;
  for (const EtcdKeyValue& kv : range.kvs) {
    std::string context = fmt::format("etcd {} key {}", client_.base_url(), kv.key);
    try {
      NodeRecord node = node_record_from_text(kv.value, context);
      std::string_view id = std::string_view(kv.key).substr(nodes_prefix_.size());
      if (node.node_id != id)
        fail("{}: the record's node_id '{}' differs from the key's '{}'", context, node.node_id, id);
      nodes.push_back(std::move(node));
    } catch (const Error& e) {
      spdlog::warn("etcd registry: skipping an entry: {}", e.what());
    }
  }
  std::sort(nodes.begin(), nodes.end(), [](const NodeRecord& a, const NodeRecord& b) { return a.node_id < b.node_id; });
  seen_revision_ = range.revision;
  return nodes;
}

std::optional<std::vector<NodeRecord>> EtcdRegistry::wait_for_change(std::chrono::milliseconds wait) {
  std::lock_guard lock(coordinator_mutex_);
  if (seen_revision_ == 0) list_locked();  // the baseline: changes after this moment count
  if (!client_.watch_prefix(nodes_prefix_, seen_revision_ + 1, wait)) return std::nullopt;
  return list_locked();
}

}  // namespace baton::registry
