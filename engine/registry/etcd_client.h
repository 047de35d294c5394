// A small client for etcd's v3 HTTP/JSON gateway (etcd 3.4: POST /v3/kv/put, /v3/kv/range,
// /v3/kv/deleterange, /v3/lease/grant, /v3/lease/keepalive, /v3/lease/revoke, /v3/watch).
// Its one job is the protocol: base64 keys and values, int64 fields as JSON strings,
// etcd's error bodies turned into baton::Error messages that name the URL, the operation and
// etcd's own message. It knows nothing about node records (see etcd_registry.h).
//
// Non-goals: TLS, authentication, transactions, multi-endpoint failover.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/error.h"
#include "engine/cluster/etcd_url.h"

namespace baton::registry {

// An error body etcd itself answered, with its gRPC status code (5: NotFound, e.g. a lease
// that does not exist; -1 when the body has none): callers decide on the code, not the text.
class EtcdReplyError : public Error {
 public:
  EtcdReplyError(const std::string& what, int grpc_code) : Error(what), grpc_code_(grpc_code) {}
  int grpc_code() const { return grpc_code_; }

 private:
  int grpc_code_;
};
inline constexpr int kEtcdNotFound = 5;  // gRPC NOT_FOUND

// The smallest key greater than every key that starts with `prefix` (etcd's "prefix" range end).
std::string etcd_prefix_end(std::string_view prefix);

struct EtcdKeyValue {
  std::string key;
  std::string value;
  int64_t mod_revision = 0;
  int64_t lease = 0;  // 0: not bound to a lease
};

struct EtcdRangeResult {
  std::vector<EtcdKeyValue> kvs;  // in key order
  int64_t revision = 0;           // the store's revision this answer reflects
};

// One client per etcd endpoint. Every call opens its own HTTP connection, so one EtcdClient
// may be used from several threads at once. Every failure (unreachable, timeout, HTTP error,
// an error body from etcd, a reply that is not the documented JSON) throws baton::Error.
class EtcdClient {
 public:
  struct Options {
    std::chrono::milliseconds timeout{3000};  // connect, read and write timeout of one request
  };

  EtcdClient(std::string host, uint16_t port, Options options);
  EtcdClient(std::string host, uint16_t port) : EtcdClient(std::move(host), port, Options{}) {}

  // "http://HOST:PORT", as used in error messages.
  const std::string& base_url() const { return base_url_; }

  // Grants a lease of `ttl` (etcd may raise tiny TTLs to its minimum); returns its id.
  int64_t grant_lease(std::chrono::seconds ttl) const;
  // Refreshes a lease; returns its new remaining TTL in seconds, 0 when the lease no longer
  // exists (expired or revoked).
  int64_t keep_alive_lease(int64_t lease) const;
  // Revokes a lease, deleting every key bound to it. Returns false if it did not exist.
  bool revoke_lease(int64_t lease) const;

  // Creates or replaces `key`, bound to `lease` unless 0; returns the new store revision.
  int64_t put(std::string_view key, std::string_view value, int64_t lease = 0) const;
  // Every key starting with `prefix`, in key order.
  EtcdRangeResult range_prefix(std::string_view prefix) const;
  // The value of one key, if it exists.
  EtcdRangeResult range_key(std::string_view key) const;
  // Deletes one key; returns how many keys were deleted (0 or 1).
  int64_t delete_key(std::string_view key) const;

  // Watches every key starting with `prefix` from `start_revision` (events at revisions
  // >= start_revision, so changes made before the call are not missed). Returns true as soon
  // as one event arrives (or the revision was compacted away: the caller must re-read), false
  // when `wait` passes without one.
  bool watch_prefix(std::string_view prefix, int64_t start_revision, std::chrono::milliseconds wait) const;

 private:
  std::string host_;
  uint16_t port_;
  Options options_;
  std::string base_url_;
};

}  // namespace baton::registry
