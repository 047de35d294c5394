#include "engine/pipeline/cluster.h"
#include "engine/pipeline/connect_failure.h"
#include "engine/pipeline/load_progress.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <random>
#include <thread>

#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "engine/base/error.h"
#include "engine/model/stage.h"
#include "engine/pipeline/wire.h"
#include "engine/runtime/local_model.h"
#include "gguf/model_identity.h"
#include "net/auth.h"

namespace baton::pipeline {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Cluster::Link {
  net::ConnectionPtr connection;  // replaced only by connect_link (the runner's thread)
  mutable std::mutex mutex;
  uint64_t current = 0;               // guarded: id of `connection` (a late close of an older one is ignored)
  std::optional<std::string> closed;  // guarded: why the connection ended
};

namespace {

std::chrono::milliseconds seconds_ms(double s) {
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000.0));
}

template <class T>
const T* as(const net::Incoming& in) {
  return std::get_if<T>(&in.message);
}

}  // namespace

std::string default_coordinator_id() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown-host");
  return fmt::format("{} pid {} on {}", program_invocation_short_name, ::getpid(), host);
}

Cluster::Cluster(const ClusterConfig& config, const ClusterOptions& options) : options_(options), cluster_config_(config) {
  if (options_.coordinator_id.empty()) options_.coordinator_id = default_coordinator_id();
  file_ = gguf::GgufFile::open(config.model);
  config_ = ModelConfig::from_metadata(file_->metadata());
  identity_ = gguf::model_identity(*file_);
  plan_ = plan_layers(config, config_.n_layer);
  tokenizer_ = tokenizer::Tokenizer::from_metadata(file_->metadata());
  pool_ = std::make_unique<kernels::ThreadPool>(options.threads > 0 ? options.threads : default_thread_count());
  head_ = std::make_unique<ModelHead>(file_, config_, *pool_);
  n_ctx_ = effective_n_ctx(config_, options.n_ctx);
  if (options.activations) {
    activations_ = *options.activations;
  } else {
    auto d = parse_activation_dtype(config.activations);
    if (!d) fail("{}: cluster.activations must be f32, f16 or bf16, found '{}'", config.source, config.activations);
    activations_ = *d;
  }
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
  no.idle_timeout = std::chrono::milliseconds(static_cast<int64_t>(config.heartbeat_timeout_s * 1000.0));
  if (config.insecure)
    no.auth = net::AuthConfig::insecure();
  else if (!config.secret_file.empty())
    no.auth = net::AuthConfig::with_secret(net::load_secret_file(config.secret_file));
  else
    fail("{}: cluster needs secret_file or `insecure: true`", config.source);
  // A take-over notice is noted on the I/O thread, before the close that follows it is seen.
  node_ = std::make_unique<net::Node>(std::move(no), [this, push = inbox_.handler()](net::Incoming&& in) {
    if (const auto* e = std::get_if<net::ErrorReport>(&in.message);
        e && e->code == ErrorCode::kTakenOver) {
      spdlog::error("coordinator '{}': {}", options_.coordinator_id, e->message);
      std::lock_guard lock(notices_mutex_);
      taken_over_[in.connection->id()] = e->message;
    }
    push(std::move(in));
  });
  connect_all(config);
  load_all(config, true);
  // --take-over is the operator's decision for this load; a repair never takes a node back
  // from a coordinator that took it over (two such coordinators would take turns forever).
  options_.take_over = false;
  metrics_.max_in_flight = layers_.max_in_flight();
  for (const auto& p : plan_) metrics_.stages.push_back({p.id, 0, 0, 0});
  for (size_t h = 0; h <= plan_.size(); ++h) {
    HopMetrics hop;
    hop.from = h == 0 ? "coordinator" : plan_[h - 1].id;
    hop.to = h == plan_.size() ? "coordinator" : plan_[h].id;
    metrics_.hops.push_back(std::move(hop));
  }
}

Cluster::~Cluster() {
  for (auto& l : links_) l->connection->send(net::Goodbye{"coordinator shutting down"});
  close_all("coordinator shutting down");
  node_->stop();
}

void Cluster::close_all(const std::string& reason) {
  // close() sends what is queued first; wait (bounded) so a Rollback/Goodbye really leaves.
  for (auto& l : links_) l->connection->close(reason);
  const auto end = Clock::now() + 3s;
  for (auto& l : links_)
    while (!l->connection->close_info() && Clock::now() < end) std::this_thread::sleep_for(5ms);
}

std::string describe_connect_failure(const std::string& who, const std::string& host, uint16_t port, double timeout_s,
                                     std::string why) {
  // net says "net: cannot connect to HOST:PORT: ..."; `who` names the address already.
  const std::string prefix = fmt::format("net: cannot connect to {}:{}: ", host, port);
  if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
  // A node that answered and refused the handshake did answer (issue 29: a wrong secret was
  // reported as "did not answer within 5 s" after 20 ms).
  if (why.find("authentication") != std::string::npos)
    return fmt::format("{} refused the handshake, check that both use the same cluster secret: {}", who, why);
  if (why.find("protocol") != std::string::npos || why.find("version") != std::string::npos)
    return fmt::format("{} refused the handshake: {}", who, why);
  return fmt::format("{} did not answer within {} s: {}", who, timeout_s, why);
}

std::string Cluster::name(size_t i) const {
  return fmt::format("node {} ({}:{})", plan_[i].id, plan_[i].host, plan_[i].port);
}

void Cluster::connect_all(const ClusterConfig& config) {
  const auto deadline = Clock::now() + seconds_ms(config.connect_timeout_s);
  const auto progress = LoadProgress::current();
  if (progress) progress->begin("connecting", plan_.size(), seconds_ms(config.connect_timeout_s));
  for (size_t i = 0; i < plan_.size(); ++i) {
    if (progress) progress->waiting_for(plan_[i].id);
    links_.push_back(std::make_shared<Link>());
    connect_link(i, deadline, config.connect_timeout_s);
    if (progress) progress->connected(links_.size());
  }
}

void Cluster::connect_link(size_t i, Clock::time_point deadline, double timeout_s) {
  auto& link = links_[i];
  net::ConnectOptions co;
  co.deadline = std::max(1ms, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  net::ConnectionPtr connection;
  try {
    connection = node_->connect(plan_[i].host, plan_[i].port, co);
  } catch (const std::exception& e) {
    fail("{}", describe_connect_failure(name(i), plan_[i].host, plan_[i].port, timeout_s, e.what()));
  }
  const auto& peer = connection->peer().hello;
  if (peer.node_id != plan_[i].id) {
    connection->close("unexpected node id");
    fail("{} answered as node '{}', expected '{}'", name(i), peer.node_id, plan_[i].id);
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

std::optional<std::string> Cluster::broken() const {
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

bool Cluster::repair() {
  if (!layers_.passes_.empty()) fail("repair: {} passes are in flight", layers_.passes_.size());
  const auto why = broken();
  if (!why) return false;
  const double timeout_s = std::min(cluster_config_.connect_timeout_s, 2.0);
  const auto deadline = Clock::now() + seconds_ms(timeout_s);
  std::vector<std::string> lost;
  for (size_t i = 0; i < links_.size(); ++i) {
    bool closed = false;
    {
      std::lock_guard lock(links_[i]->mutex);
      closed = links_[i]->closed.has_value();
    }
    if (!closed) continue;
    lost.push_back(plan_[i].id);
    if (links_[i]->connection) links_[i]->connection->close("reconnecting");
    connect_link(i, deadline, timeout_s);
  }
  if (lost.empty())
    spdlog::debug("coordinator: loading the plan again");
  else
    spdlog::info("coordinator: reconnected {}; loading the plan again", fmt::join(lost, ", "));
  try {
    load_all(cluster_config_, false);
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

void Cluster::abandon_node(const std::string& node_id, const std::string& reason) {
  for (size_t i = 0; i < plan_.size() && i < links_.size(); ++i) {
    if (plan_[i].id != node_id) continue;
    {
      std::lock_guard lock(links_[i]->mutex);
      if (!links_[i]->closed) links_[i]->closed = fmt::format("abandoned by the coordinator: {}", reason);
    }
    if (links_[i]->connection) links_[i]->connection->close(reason);
  }
}

void Cluster::check_links() const {
  for (size_t i = 0; i < links_.size(); ++i) {
    std::lock_guard lock(links_[i]->mutex);
    if (links_[i]->closed) fail("{} is gone: {}", name(i), *links_[i]->closed);
  }
}

size_t Cluster::link_index(const net::ConnectionPtr& c) const {
  for (size_t i = 0; i < links_.size(); ++i)
    if (links_[i]->connection && links_[i]->connection->id() == c->id()) return i;
  return links_.size();
}

std::optional<net::Incoming> Cluster::next_message(std::chrono::milliseconds wait) {
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

void Cluster::load_all(const ClusterConfig& config, bool initial) {
  std::random_device rd;
  const uint64_t load_id = (uint64_t{rd()} << 32) | rd();
  for (size_t i = 0; i < plan_.size(); ++i) {
    net::Prepare p;
    p.load_id = load_id;
    p.model_identity = identity_;
    p.model_path_hint = config.model;
    p.layer_first = static_cast<uint32_t>(plan_[i].first);
    p.layer_last = static_cast<uint32_t>(plan_[i].last - 1);
    p.activation_dtype = activations_;
    if (i + 1 < plan_.size()) p.next_hop = net::NextHop{plan_[i + 1].host, plan_[i + 1].port, plan_[i + 1].id};
    p.n_ctx = static_cast<uint64_t>(std::max<int64_t>(n_ctx_, 0));  // net::check_message bounds it
    p.max_sequences = static_cast<uint32_t>(std::max(options_.max_sequences, 0));
    p.options = {{kOptionCoordinator, options_.coordinator_id}};
    if (options_.take_over) p.options.push_back({kOptionTakeOver, "1"});
    links_[i]->connection->send(p);
  }
  std::vector<bool> ready(plan_.size(), false);
  std::vector<std::string> failures;
  const auto deadline = Clock::now() + seconds_ms(config.load_timeout_s);
  size_t n_ready = 0;
  uint64_t bytes_ready = 0;
  const auto progress = LoadProgress::current();
  auto tell_progress = [&] {
    if (!progress) return;
    std::vector<std::string> pending;
    for (size_t i = 0; i < plan_.size(); ++i)
      if (!ready[i]) pending.push_back(plan_[i].id);
    progress->ready(n_ready, bytes_ready);
    progress->pending(std::move(pending));
  };
  if (progress) progress->begin("loading", plan_.size(), seconds_ms(config.load_timeout_s));
  tell_progress();
  try {
    while (n_ready + failures.size() < plan_.size()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      auto in = next_message(std::max(left, 0ms));
      if (!in) {
        std::vector<std::string> silent;
        for (size_t i = 0; i < plan_.size(); ++i)
          if (!ready[i]) silent.push_back(name(i));
        failures.push_back(fmt::format("{} did not answer within {} s", fmt::join(silent, ", "), config.load_timeout_s));
        break;
      }
      const size_t i = link_index(in->connection);
      if (i == links_.size()) continue;
      if (const auto* r = as<net::Ready>(*in); r && r->load_id == load_id && !ready[i]) {
        ready[i] = true;
        ++n_ready;
        bytes_ready += r->memory_bytes;
        tell_progress();
        spdlog::debug("{} ready: {} bytes, {} ms", name(i), r->memory_bytes, r->load_ms);
      } else if (const auto* f = as<net::Failed>(*in); f && f->load_id == load_id) {
        failures.push_back(fmt::format("{} failed to prepare: {}", name(i), f->reason));
      }
    }
  } catch (const std::exception& e) {
    failures.push_back(e.what());
  }
  if (!failures.empty()) {
    for (auto& l : links_) l->connection->send(net::Rollback{load_id});
    if (initial) close_all("load rolled back");
    fail("cluster load failed, rolled back: {}", fmt::join(failures, "; "));
  }
  for (auto& l : links_) l->connection->send(net::Commit{load_id});
}

std::vector<StageStats> Cluster::round_trip_stats(const char* what) {
  for (auto& l : links_) l->connection->send(net::StatsRequest{});
  std::vector<StageStats> out(plan_.size());
  std::vector<bool> got(plan_.size(), false);
  size_t n = 0;
  while (n < plan_.size()) {
    auto in = next_message(10000ms);
    if (!in) {
      for (size_t i = 0; i < plan_.size(); ++i)
        if (!got[i]) fail("{}: {} did not answer within 10 s", what, name(i));
    }
    const size_t i = link_index(in->connection);
    if (i == links_.size()) continue;
    if (as<net::Hidden>(*in)) {
      layers_.take(*in);  // a pass in flight finished meanwhile
      continue;
    }
    if (const auto* s = as<net::Stats>(*in); s && !got[i]) {
      got[i] = true;
      ++n;
      out[i].node_id = plan_[i].id;
      for (const auto& e : s->entries) out[i].values[e.name] = e.value;
    } else if (const auto* e = as<net::ErrorReport>(*in)) {
      fail("{}: {} reported: {}", what, name(i), e->message);
    }
  }
  return out;
}

std::vector<StageStats> Cluster::stats() { return round_trip_stats("stats"); }

ClusterMetrics Cluster::metrics() const {
  std::lock_guard lock(metrics_mutex_);
  return metrics_;
}

void RemoteLayers::forward(const TokenBatch& batch, std::vector<float>& hidden, std::vector<float>& out_rows) {
  if (!passes_.empty())
    fail("forward: {} submitted passes are unfinished; finish() them first", passes_.size());
  submit(batch, hidden);
  finish(out_rows);
}

int RemoteLayers::max_in_flight() const {
  const int n = cluster_.options_.max_in_flight;
  return n > 0 ? n : std::max(1, static_cast<int>(cluster_.plan_.size()));
}

void RemoteLayers::fail_all(const std::string& why) {
  const size_t lost = passes_.size();
  passes_.clear();
  {
    std::lock_guard lock(cluster_.metrics_mutex_);
    cluster_.metrics_.failed_passes += lost;
  }
  if (lost > 1) fail("{} ({} passes in flight lost)", why, lost);
  fail("{}", why);
}

void RemoteLayers::submit(const TokenBatch& batch, std::vector<float>& hidden) {
  Cluster& c = cluster_;
  const size_t n_embd = static_cast<size_t>(c.config_.n_embd);
  if (hidden.size() < batch.size() * n_embd)
    fail("forward: hidden has {} floats, the batch needs {}", hidden.size(), batch.size() * n_embd);
  if (static_cast<int>(passes_.size()) >= max_in_flight())
    fail("forward: {} passes are already in flight (max_in_flight {}); finish() one first", passes_.size(),
         max_in_flight());
  try {
    c.check_links();
  } catch (const std::exception& e) {
    fail_all(fmt::format("forward: {}", e.what()));
  }
  {
    std::lock_guard lock(c.notices_mutex_);
    if (!c.not_loaded_.empty()) fail("forward: the pipeline is not loaded: {}", c.not_loaded_);
  }
  Pass p;
  p.id = next_micro_batch_++;
  p.n_tokens = batch.size();
  p.n_outputs = batch.n_outputs();
  auto t = make_tensor(hidden.data(), batch.size(), n_embd, c.activations_);
  const double bytes = static_cast<double>(t.ref.bytes);
  net::Forward f{p.id, to_wire(batch), t.ref, batch.hints};
  p.sent = Clock::now();
  stamp_sent(f, p.sent);  // where the first hop and the round trip begin
  if (!c.links_.front()->connection->send(f, std::move(t.body)))
    fail_all(fmt::format("forward: cannot send micro-batch {} to {}", p.id, c.name(0)));
  passes_.push_back(std::move(p));
  std::lock_guard lock(c.metrics_mutex_);
  c.metrics_.bytes_to_first += bytes;
  c.metrics_.peak_in_flight = std::max(c.metrics_.peak_in_flight, static_cast<int>(passes_.size()));
}

void RemoteLayers::take(net::Incoming& in) {
  Cluster& c = cluster_;
  if (const auto* h = as<net::Hidden>(in)) {
    for (auto& p : passes_)
      if (p.id == h->micro_batch_id) {
        p.reply = std::move(in);
        return;
      }
    return;  // a reply of a pass lost to an earlier failure
  }
  if (const auto* e = as<net::ErrorReport>(in)) {
    const size_t i = c.link_index(in.connection);
    const std::string who = i < c.plan_.size() ? c.name(i) : std::string("a node");
    const auto& about = e->micro_batch_id;
    if (about && std::none_of(passes_.begin(), passes_.end(), [&](const Pass& p) { return p.id == *about; })) {
      spdlog::debug("ignoring a late error about lost micro-batch {}: {}", *about, e->message);
      return;
    }
    fail_all(fmt::format("forward: {} reported: {}", who, e->message));
  }
}

void RemoteLayers::finish(std::vector<float>& out_rows) {
  Cluster& c = cluster_;
  if (passes_.empty()) fail("forward: finish() without an unfinished pass");
  const size_t n_embd = static_cast<size_t>(c.config_.n_embd);
  while (!passes_.front().reply) {
    const Pass& oldest = passes_.front();
    const auto deadline = oldest.sent + c.options_.request_timeout;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    std::optional<net::Incoming> in;
    try {
      in = c.next_message(std::max(left, 0ms));
    } catch (const std::exception& e) {
      fail_all(fmt::format("forward: {}", e.what()));
    }
    if (!in)
      fail_all(fmt::format("forward: no result for micro-batch {} from {} within {} ms", oldest.id,
                           c.name(c.plan_.size() - 1), c.options_.request_timeout.count()));
    take(*in);
  }
  Pass p = std::move(passes_.front());
  passes_.pop_front();
  const auto& in = *p.reply;
  const auto& h = std::get<net::Hidden>(in.message);
  const size_t last = c.plan_.size() - 1;
  const std::vector<StageTiming>& timings = h.timings;
  const int64_t last_sent_ns = h.sent_ns;
  try {
    if (h.tokens.size() != p.n_outputs)
      fail("{} returned {} rows for micro-batch {}, expected {}", c.name(last), h.tokens.size(), p.id, p.n_outputs);
    read_tensor(h.hidden, in.body, h.tokens.size(), n_embd, out_rows, "Hidden");
    if (timings.size() != c.plan_.size())
      fail("{}: Hidden of micro-batch {} lists {} stage timings, the chain has {} stages", c.name(last), p.id,
           timings.size(), c.plan_.size());
  } catch (const std::exception& e) {
    fail_all(fmt::format("forward: {}", e.what()));
  }
  const auto received = in.received_at == Clock::time_point{} ? Clock::now() : in.received_at;
  const double rtt = std::chrono::duration<double, std::milli>(received - p.sent).count();
  const HopTime back = hop_time(last_sent_ns, received, in.connection->clock());
  std::lock_guard lock(c.metrics_mutex_);
  auto& m = c.metrics_;
  ++m.passes;
  m.tokens += p.n_tokens;
  m.round_trip_ms += rtt;
  double residence = 0;
  for (size_t i = 0; i < timings.size(); ++i) {
    m.stages[i].compute_ms += timings[i].compute_ms;
    m.stages[i].residence_ms += timings[i].residence_ms;
    m.stages[i].bytes_out += timings[i].bytes_out;
    residence += timings[i].residence_ms;
  }
  const double all_hops = std::max(0.0, rtt - residence);  // exact: the stamps telescope
  m.network_ms += all_hops;
  // Each hop's true time lies in [0, all_hops] of this pass, so clamping an estimate into
  // that range only moves it toward the truth (its error bound still holds).
  auto add_hop = [&](HopMetrics& hop, const HopTime& t, double bytes) {
    hop.bytes += bytes;
    if (t.error_ms < 0) {
      ++hop.unmeasured;
      return;
    }
    hop.network_ms += std::clamp(t.ms, 0.0, all_hops);
    hop.error_ms += t.error_ms;
    ++hop.passes;
    hop.tokens += p.n_tokens;
  };
  for (size_t i = 0; i < timings.size(); ++i)
    add_hop(m.hops[i], {timings[i].hop_in_ms, timings[i].hop_in_error_ms},
            i == 0 ? static_cast<double>(p.n_tokens * n_embd * net::dtype_size(c.activations_))
                   : timings[i - 1].bytes_out);
  add_hop(m.hops.back(), back, timings.back().bytes_out);
}

void RemoteLayers::reset_sequence(uint64_t seq_id) {
  Cluster& c = cluster_;
  if (seq_id > std::numeric_limits<uint32_t>::max()) fail("sequence id {} does not fit the wire's 32 bits", seq_id);
  try {
    c.check_links();
  } catch (const std::exception& e) {
    if (!passes_.empty()) fail_all(fmt::format("reset_sequence: {}", e.what()));
    throw;
  }
  if (!c.links_.front()->connection->send(net::ResetSequence{{static_cast<uint32_t>(seq_id)}, false}))
    fail("reset_sequence: cannot send to {}: {}", c.name(0),
         c.links_.front()->connection->close_info() ? c.links_.front()->connection->close_info()->reason
                                                    : "the connection is closing");
}

int64_t RemoteLayers::n_ctx() const { return cluster_.n_ctx_; }

}  // namespace baton::pipeline
