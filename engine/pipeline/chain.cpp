#include "engine/pipeline/chain.h"
#include "engine/pipeline/chain_link.h"
#include "engine/pipeline/connect_failure.h"
#include "engine/pipeline/load_progress.h"

#include <spdlog/spdlog.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <mutex>
#include <thread>

#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "engine/base/error.h"
#include "engine/pipeline/wire.h"

namespace baton::pipeline {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::string default_coordinator_id() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown-host");
  return fmt::format("{} pid {} on {}", program_invocation_short_name, ::getpid(), host);
}

Chain::Chain(const ModelFront& front, std::vector<StageAssignment> stages, ChainOptions options)
    : options_(std::move(options)),
      plan_(std::move(stages)),
      identity_(front.identity()),
      model_path_(front.path()),
      n_embd_(front.config().n_embd),
      n_ctx_(front.n_ctx()) {
  if (options_.coordinator_id.empty()) options_.coordinator_id = default_coordinator_id();
  if (plan_.empty()) fail("cluster: a chain needs at least one stage");
  if (!options_.auth) fail("cluster: a chain needs a cluster secret or insecure mode");
  activations_ = options_.activations;
  if (!is_activation_dtype(activations_))
    fail("cluster: activations cannot travel as {}", net::to_string(activations_));
  metrics_.activations = std::string(net::to_string(activations_));

  net::NodeOptions no;
  no.node_id = "coordinator";
  no.role = net::Role::kCoordinator;
  no.clock_probe_interval = kClockProbeInterval;
  // Liveness: every worker answers the clock probes from its I/O thread, also while it
  // computes; a link silent for heartbeat_timeout is a frozen or unreachable node, closed so
  // that a pass waiting on it fails naming it (instead of after request_timeout).
  no.idle_timeout = std::chrono::milliseconds(static_cast<int64_t>(options_.heartbeat_timeout_s * 1000.0));
  no.auth = *options_.auth;
  // A take-over notice is noted on the I/O thread, before the close that follows it is seen.
  node_ = std::make_unique<net::Node>(std::move(no), [this, push = inbox_.handler()](net::Incoming&& in) {
    if (const auto* e = std::get_if<net::ErrorReport>(&in.message); e && e->code == ErrorCode::kTakenOver) {
      spdlog::error("coordinator '{}': {}", options_.coordinator_id, e->message);
      std::lock_guard lock(notices_mutex_);
      taken_over_[in.connection->id()] = e->message;
    }
    push(std::move(in));
  });
  connect_all();
  load_all(true);
  // --take-over is the operator's decision for this load; a repair never takes a node back
  // from a coordinator that took it over (two such coordinators would take turns forever).
  options_.take_over = false;
  metrics_.max_in_flight = layers_.max_in_flight();
  for (const auto& p : plan_) metrics_.stages.push_back({p.node_id, 0, 0, 0});
  for (size_t h = 0; h <= plan_.size(); ++h) {
    HopMetrics hop;
    hop.from = h == 0 ? "coordinator" : plan_[h - 1].node_id;
    hop.to = h == plan_.size() ? "coordinator" : plan_[h].node_id;
    metrics_.hops.push_back(std::move(hop));
  }
}

Chain::~Chain() {
  for (auto& l : links_) l->connection->send(net::Goodbye{"coordinator shutting down"});
  close_all("coordinator shutting down");
  node_->stop();
}

void Chain::close_all(const std::string& reason) {
  // close() sends what is queued first; wait (bounded) so a Rollback/Goodbye really leaves.
  for (auto& l : links_) l->connection->close(reason);
  const auto end = Clock::now() + 3s;
  for (auto& l : links_)
    while (!l->connection->close_info() && Clock::now() < end) std::this_thread::sleep_for(5ms);
}

std::string Chain::name(size_t i) const {
  return fmt::format("node {} ({}:{})", plan_[i].node_id, plan_[i].host, plan_[i].port);
}

void Chain::connect_all() {
  const auto deadline = Clock::now() + chain_seconds_ms(options_.connect_timeout_s);
  const auto progress = LoadProgress::current();
  if (progress) progress->begin("connecting", plan_.size(), chain_seconds_ms(options_.connect_timeout_s));
  for (size_t i = 0; i < plan_.size(); ++i) {
    if (progress) progress->waiting_for(plan_[i].node_id);
    links_.push_back(std::make_shared<Link>());
    connect_link(i, deadline, options_.connect_timeout_s);
    if (progress) progress->connected(links_.size());
  }
}

void Chain::connect_link(size_t i, Clock::time_point deadline, double timeout_s) {
  auto& link = links_[i];
  net::ConnectOptions co;
  co.deadline = std::max(1ms, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  net::ConnectionPtr connection;
  try {
    connection = node_->connect(plan_[i].host, plan_[i].port, co);
  } catch (const std::exception& e) {
    fail("{}", describe_connect_failure(name(i), timeout_s, e));
  }
  const auto& peer = connection->peer().hello;
  if (peer.node_id != plan_[i].node_id) {
    connection->close("unexpected node id");
    fail("{} answered as node '{}', expected '{}'", name(i), peer.node_id, plan_[i].node_id);
  }
  {
    std::lock_guard lock(link->mutex);
    link->connection = connection;
    link->current = connection->id();
    link->closed.reset();
  }
  connection->on_closed([this, id = connection->id(), weak = std::weak_ptr<Link>(link)](const net::CloseInfo& info) {
    auto l = weak.lock();
    if (!l) return;
    std::string why = info.reason;
    {
      std::lock_guard lock(notices_mutex_);
      if (auto it = taken_over_.find(id); it != taken_over_.end()) why = it->second;
    }
    std::lock_guard lock(l->mutex);
    if (l->current == id && !l->closed) l->closed = why;
  });
  // The close may have been seen before the callback was set.
  if (!connection->is_open()) {
    std::lock_guard lock(link->mutex);
    if (!link->closed) link->closed = connection->close_info() ? connection->close_info()->reason : "connection closed";
  }
}

std::optional<std::string> Chain::broken() const {
  std::vector<std::string> lost;
  for (size_t i = 0; i < links_.size(); ++i) {
    std::lock_guard lock(links_[i]->mutex);
    if (links_[i]->closed) lost.push_back(fmt::format("{} is gone: {}", name(i), *links_[i]->closed));
  }
  {
    std::lock_guard lock(notices_mutex_);
    if (!not_loaded_.empty()) lost.push_back(not_loaded_);
  }
  if (lost.empty()) return std::nullopt;
  return fmt::format("{}", fmt::join(lost, "; "));
}

bool Chain::repair() {
  if (!layers_.passes_.empty()) fail("repair: {} passes are in flight", layers_.passes_.size());
  const auto why = broken();
  if (!why) return false;
  const double timeout_s = std::min(options_.connect_timeout_s, 2.0);
  const auto deadline = Clock::now() + chain_seconds_ms(timeout_s);
  std::vector<std::string> lost;
  for (size_t i = 0; i < links_.size(); ++i) {
    bool closed = false;
    {
      std::lock_guard lock(links_[i]->mutex);
      closed = links_[i]->closed.has_value();
    }
    if (!closed) continue;
    lost.push_back(plan_[i].node_id);
    if (links_[i]->connection) links_[i]->connection->close("reconnecting");
    connect_link(i, deadline, timeout_s);
  }
  if (lost.empty()) spdlog::debug("coordinator: loading the plan again");
  else spdlog::info("coordinator: reconnected {}; loading the plan again", fmt::join(lost, ", "));
  try {
    load_all(false);
  } catch (const std::exception& e) {
    std::lock_guard lock(notices_mutex_);
    not_loaded_ = e.what();
    throw;
  }
  {
    std::lock_guard lock(notices_mutex_);
    not_loaded_.clear();
  }
  spdlog::info("coordinator: pipeline repaired, serving again");
  return true;
}

void Chain::abandon_node(const std::string& node_id, const std::string& reason) {
  for (size_t i = 0; i < plan_.size() && i < links_.size(); ++i) {
    if (plan_[i].node_id != node_id) continue;
    {
      std::lock_guard lock(links_[i]->mutex);
      if (!links_[i]->closed) links_[i]->closed = fmt::format("abandoned by the coordinator: {}", reason);
    }
    if (links_[i]->connection) links_[i]->connection->close(reason);
  }
}

void Chain::check_links() const {
  for (size_t i = 0; i < links_.size(); ++i) {
    std::lock_guard lock(links_[i]->mutex);
    if (links_[i]->closed) fail("{} is gone: {}", name(i), *links_[i]->closed);
  }
}

size_t Chain::link_index(const net::ConnectionPtr& c) const {
  for (size_t i = 0; i < links_.size(); ++i)
    if (links_[i]->connection && links_[i]->connection->id() == c->id()) return i;
  return links_.size();
}

std::optional<net::Incoming> Chain::next_message(std::chrono::milliseconds wait) {
  const auto end = Clock::now() + wait;
  while (true) {
    // Messages already queued win over a closed link (a last Failed/ErrorReport says more).
    if (auto in = inbox_.pop(0ms)) return in;
    check_links();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
    if (left <= 0ms) return std::nullopt;
    if (auto in = inbox_.pop(std::min(left, 100ms))) return in;
  }
}

}  // namespace baton::pipeline
