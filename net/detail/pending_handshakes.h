// The accept budget for connections still in their handshake (issue 24, defect 6): bounded in
// total and per source address, separately from the authenticated connections, so a flood of
// sockets that never authenticate cannot keep a real peer out. When a new connection finds
// the budget full it is not refused: a pending connection is dropped instead, the one that got
// least far in its handshake (oldest first among equals), from the same address if that
// address is over its share. A real peer, which completes its handshake in a few round trips,
// therefore always gets through, while an idle flood only churns among its own sockets.
// I/O thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

namespace baton::net::detail {

class Session;

class PendingHandshakes {
 public:
  PendingHandshakes(size_t max_total, size_t max_per_address)
      : max_total_(max_total), max_per_address_(max_per_address) {}

  // Makes room for one more connection from `address` (dropping pending ones as above), then
  // records `session`.
  void admit(const std::shared_ptr<Session>& session, const std::string& address);
  // The handshake of `id` ended (either way).
  void done(uint64_t id);
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t id;
    std::weak_ptr<Session> session;
    std::string address;
  };
  // Drops the least advanced pending connection, from `address` if non-empty.
  void evict(const std::string* address);
  void erase(std::list<Entry>::iterator it);

  size_t max_total_;
  size_t max_per_address_;
  std::list<Entry> entries_;  // oldest first
  std::unordered_map<std::string, size_t> per_address_;
  // Drops are logged at most every few seconds, with a count (a flood would flood the log).
  size_t dropped_since_log_ = 0;
  std::chrono::steady_clock::time_point last_log_{};
};

}  // namespace baton::net::detail
