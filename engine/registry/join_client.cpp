#include "engine/registry/join_client.h"

#include <spdlog/spdlog.h>

#include <charconv>
#include <cmath>

#include "engine/base/error.h"
#include "net/node.h"

namespace baton::registry {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::pair<std::string, uint16_t> parse_host_port(const std::string& text, const std::string& what) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    fail("{} '{}' must be HOST:PORT", what, text);
  unsigned port = 0;
  const char* begin = text.data() + colon + 1;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, port);
  if (ec != std::errc() || ptr != end || port == 0 || port > 65535)
    fail("{} '{}': port must be a number 1-65535", what, text);
  return {text.substr(0, colon), static_cast<uint16_t>(port)};
}

namespace {

// Sleeps up to `d` or until stop is requested; returns false when stopping.
class Stopper {
 public:
  bool sleep(std::chrono::milliseconds d) {
    std::unique_lock lock(mutex_);
    return !cv_.wait_for(lock, d, [&] { return stop_; });
  }
  void request() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
  }
  bool requested() {
    std::lock_guard lock(mutex_);
    return stop_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
};

class ControlJoin : public Membership {
 public:
  ControlJoin(const std::string& node_id, ControlJoinOptions options, StatusFn status)
      : id_(node_id), options_(std::move(options)), status_(std::move(status)) {
    net::NodeOptions no;
    no.node_id = id_;
    no.role = net::Role::kWorker;
    no.auth = options_.auth;
    node_ = std::make_unique<net::Node>(std::move(no), [](net::Incoming&&) {});
    thread_ = std::thread([this] { run(); });
  }
  ~ControlJoin() override { stop("worker stopping"); }

  void stop(const std::string& reason) override {
    if (stopped_.exchange(true)) return;
    stopper_.request();
    if (thread_.joinable()) thread_.join();
    if (auto c = current()) {
      c->send(net::Goodbye{reason});
      c->close("deregistered: " + reason);
      const auto end = Clock::now() + 2s;
      while (!c->close_info() && Clock::now() < end) std::this_thread::sleep_for(5ms);
      spdlog::info("{}: deregistered from {}:{} ({})", id_, options_.host, options_.port, reason);
    }
    node_->stop();
  }

  bool registered() const override {
    auto c = current();
    return c && c->is_open();
  }

 private:
  net::ConnectionPtr current() const {
    std::lock_guard lock(mutex_);
    return connection_;
  }

  void run() {
    auto backoff = 100ms;
    bool warned = false;
    while (!stopper_.requested()) {
      net::ConnectionPtr c;
      try {
        net::ConnectOptions co;
        co.deadline = 1000ms;
        co.max_backoff = 250ms;
        c = node_->connect(options_.host, options_.port, co);
      } catch (const std::exception& e) {
        if (!warned) spdlog::warn("{}: cannot join {}:{} (retrying): {}", id_, options_.host, options_.port, e.what());
        warned = true;
        if (!stopper_.sleep(backoff)) return;
        backoff = std::min(backoff * 2, options_.max_backoff);
        continue;
      }
      warned = false;
      const auto connected_at = Clock::now();
      {
        std::lock_guard lock(mutex_);
        connection_ = c;
      }
      c->send(net::Register{status_()});
      spdlog::info("{}: registered with {}:{}", id_, options_.host, options_.port);
      while (c->is_open()) {
        if (!stopper_.sleep(options_.heartbeat_interval)) return;  // stop(): Goodbye on it
        c->send(net::Heartbeat{status_()});
      }
      const auto info = c->close_info();
      spdlog::warn("{}: lost the coordinator {}:{} ({}); re-joining", id_, options_.host, options_.port,
                   info ? info->reason : "closed");
      // A coordinator that keeps closing at once (e.g. it refuses this node) is retried with a
      // growing backoff; one that served for a while is retried quickly (a restart).
      if (Clock::now() - connected_at < 2 * options_.heartbeat_interval) {
        if (!stopper_.sleep(backoff)) return;
        backoff = std::min(backoff * 2, options_.max_backoff);
      } else {
        backoff = 100ms;
      }
    }
  }

  std::string id_;
  ControlJoinOptions options_;
  StatusFn status_;
  std::unique_ptr<net::Node> node_;
  mutable std::mutex mutex_;
  net::ConnectionPtr connection_;
  Stopper stopper_;
  std::atomic<bool> stopped_{false};
  std::thread thread_;
};

class BackendJoin : public Membership {
 public:
  BackendJoin(std::unique_ptr<RegistryBackend> backend, std::chrono::milliseconds interval, StatusFn status)
      : backend_(std::move(backend)), interval_(interval), status_(std::move(status)) {
    thread_ = std::thread([this] { run(); });
  }
  ~BackendJoin() override { stop("worker stopping"); }

  void stop(const std::string& reason) override {
    if (stopped_.exchange(true)) return;
    stopper_.request();
    if (thread_.joinable()) thread_.join();
    try {
      backend_->withdraw();
      spdlog::info("withdrew from the registry ({})", reason);
    } catch (const std::exception& e) {
      spdlog::warn("cannot withdraw from the registry: {}", e.what());
    }
  }
  bool registered() const override { return announced_; }

 private:
  std::chrono::seconds ttl() const {
    return std::max<std::chrono::seconds>(1s, std::chrono::duration_cast<std::chrono::seconds>(interval_ * 3 + 999ms));
  }
  // Whether `now` differs enough from the record last written to be worth a put (each put
  // wakes the coordinator's watch): any field but memory and load, free memory by 1 % of the
  // total or 64 MiB, load by 0.1.
  static bool worth_update(const NodeRecord& last, NodeRecord now) {
    const uint64_t mem_step = std::max<uint64_t>(64ull << 20, last.memory_total / 100);
    const uint64_t d_mem =
        now.memory_free > last.memory_free ? now.memory_free - last.memory_free : last.memory_free - now.memory_free;
    if (d_mem >= mem_step || std::abs(now.load - last.load) >= 0.1f) return true;
    now.memory_free = last.memory_free;
    now.load = last.load;
    return !(now == last);
  }

  void run() {
    while (!stopper_.requested()) {
      try {
        if (!announced_) {
          last_ = status_();
          backend_->announce(last_, ttl());
          announced_ = true;
          spdlog::info("announced to the registry (ttl {} s)", ttl().count());
        } else {
          backend_->keep_alive();
          auto now = status_();
          if (worth_update(last_, now)) {
            backend_->update(now);
            last_ = now;
          }
        }
      } catch (const std::exception& e) {
        spdlog::warn("registry: {} failed (retrying): {}", announced_ ? "keep-alive" : "announce", e.what());
        announced_ = false;
      }
      if (!stopper_.sleep(interval_)) return;
    }
  }

  std::unique_ptr<RegistryBackend> backend_;
  std::chrono::milliseconds interval_;
  StatusFn status_;
  NodeRecord last_;  // what the entry holds now
  std::atomic<bool> announced_{false};
  Stopper stopper_;
  std::atomic<bool> stopped_{false};
  std::thread thread_;
};

}  // namespace

std::unique_ptr<Membership> start_control_join(const std::string& node_id, ControlJoinOptions options,
                                               StatusFn status) {
  return std::make_unique<ControlJoin>(node_id, std::move(options), std::move(status));
}

std::unique_ptr<Membership> start_backend_join(std::unique_ptr<RegistryBackend> backend,
                                               std::chrono::milliseconds heartbeat_interval, StatusFn status) {
  return std::make_unique<BackendJoin>(std::move(backend), heartbeat_interval, std::move(status));
}

}  // namespace baton::registry
