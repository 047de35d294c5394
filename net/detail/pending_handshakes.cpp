#include "net/detail/pending_handshakes.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "net/detail/session.h"

namespace baton::net::detail {

void PendingHandshakes::admit(const std::shared_ptr<Session>& session, const std::string& address) {
  if (max_per_address_ > 0 && per_address_[address] >= max_per_address_) evict(&address);
  if (max_total_ > 0 && entries_.size() >= max_total_) evict(nullptr);
  entries_.push_back({session->id(), session, address});
  ++per_address_[address];
}

void PendingHandshakes::done(uint64_t id) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->id == id) return erase(it);
}

void PendingHandshakes::erase(std::list<Entry>::iterator it) {
  auto count = per_address_.find(it->address);
  if (count != per_address_.end() && --count->second == 0) per_address_.erase(count);
  entries_.erase(it);
}

void PendingHandshakes::evict(const std::string* address) {
  auto victim = entries_.end();
  int least = 0;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (address && it->address != *address) continue;
    auto s = it->session.lock();
    int progress = s ? s->handshake_progress() : -1;  // an ended one goes first
    if (victim == entries_.end() || progress < least) {
      victim = it;
      least = progress;
    }
  }
  if (victim == entries_.end()) return;
  const std::string from = victim->address;
  if (auto s = victim->session.lock())
    s->abort({CloseKind::kLocal, fmt::format("dropped during its handshake: the budget of {} unauthenticated "
                                             "connections ({} per address) is full",
                                             max_total_, max_per_address_)});
  erase(victim);
  ++dropped_since_log_;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_log_ >= std::chrono::seconds(5)) {
    spdlog::warn(
        "net: dropped {} unauthenticated connection(s) still in their handshake "
        "(budget {} in total, {} per address; last from {}): a flood of connections "
        "that do not authenticate?",
        dropped_since_log_, max_total_, max_per_address_, from);
    dropped_since_log_ = 0;
    last_log_ = now;
  }
}

}  // namespace baton::net::detail
