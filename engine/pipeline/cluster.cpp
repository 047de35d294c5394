#include "engine/pipeline/cluster.h"

#include <spdlog/spdlog.h>

#include <mutex>
#include <random>
#include <thread>

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
  net::ConnectionPtr connection;
  mutable std::mutex mutex;
  std::optional<std::string> closed;  // why the connection ended
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

Cluster::Cluster(const ClusterConfig& config, const ClusterOptions& options) : options_(options) {
  file_ = gguf::GgufFile::open(config.model);
  config_ = ModelConfig::from_metadata(file_->metadata());
  identity_ = gguf::model_identity(*file_);
  plan_ = plan_layers(config, config_.n_layer);
  tokenizer_ = tokenizer::Tokenizer::from_metadata(file_->metadata());
  pool_ = std::make_unique<kernels::ThreadPool>(options.threads > 0 ? options.threads : default_thread_count());
  head_ = std::make_unique<ModelHead>(file_, config_, *pool_);
  n_ctx_ = effective_n_ctx(config_, options.n_ctx);

  net::NodeOptions no;
  no.node_id = "coordinator";
  no.role = net::Role::kCoordinator;
  if (config.insecure)
    no.auth = net::AuthConfig::insecure();
  else if (!config.secret_file.empty())
    no.auth = net::AuthConfig::with_secret(net::load_secret_file(config.secret_file));
  else
    fail("{}: cluster needs secret_file or `insecure: true`", config.source);
  node_ = std::make_unique<net::Node>(std::move(no), inbox_.handler());
  connect_all(config);
  load_all(config);
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

std::string Cluster::name(size_t i) const {
  return fmt::format("node {} ({}:{})", plan_[i].id, plan_[i].host, plan_[i].port);
}

void Cluster::connect_all(const ClusterConfig& config) {
  const auto deadline = Clock::now() + seconds_ms(config.connect_timeout_s);
  for (size_t i = 0; i < plan_.size(); ++i) {
    auto link = std::make_shared<Link>();
    net::ConnectOptions co;
    co.deadline = std::max(1ms, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
    try {
      link->connection = node_->connect(plan_[i].host, plan_[i].port, co);
    } catch (const std::exception& e) {
      fail("{} did not answer within {} s: {}", name(i), config.connect_timeout_s, e.what());
    }
    const auto& peer = link->connection->peer().hello;
    if (peer.node_id != plan_[i].id)
      fail("{} answered as node '{}', expected '{}'", name(i), peer.node_id, plan_[i].id);
    link->connection->on_closed([weak = std::weak_ptr<Link>(link)](const net::CloseInfo& info) {
      if (auto l = weak.lock()) {
        std::lock_guard lock(l->mutex);
        l->closed = info.reason;
      }
    });
    links_.push_back(std::move(link));
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

void Cluster::load_all(const ClusterConfig& config) {
  std::random_device rd;
  const uint64_t load_id = (uint64_t{rd()} << 32) | rd();
  for (size_t i = 0; i < plan_.size(); ++i) {
    net::Prepare p;
    p.load_id = load_id;
    p.model_identity = identity_;
    p.model_path_hint = config.model;
    p.layer_first = static_cast<uint32_t>(plan_[i].first);
    p.layer_last = static_cast<uint32_t>(plan_[i].last - 1);
    if (i + 1 < plan_.size()) p.next_hop = net::NextHop{plan_[i + 1].host, plan_[i + 1].port, plan_[i + 1].id};
    p.options = {{kOptionNCtx, std::to_string(n_ctx_)}, {kOptionMaxSequences, std::to_string(options_.max_sequences)}};
    links_[i]->connection->send(p);
  }
  std::vector<bool> ready(plan_.size(), false);
  std::vector<std::string> failures;
  const auto deadline = Clock::now() + seconds_ms(config.load_timeout_s);
  size_t n_ready = 0;
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
    close_all("load rolled back");
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

void RemoteLayers::forward(const TokenBatch& batch, std::vector<float>& hidden, std::vector<float>& out_rows) {
  Cluster& c = cluster_;
  const size_t n_embd = static_cast<size_t>(c.config_.n_embd);
  if (hidden.size() < batch.size() * n_embd)
    fail("forward: hidden has {} floats, the batch needs {}", hidden.size(), batch.size() * n_embd);
  c.check_links();
  const uint64_t id = next_micro_batch_++;
  auto t = make_f32_tensor(hidden.data(), batch.size(), n_embd);
  if (!c.links_.front()->connection->send(net::Forward{id, to_wire(batch), t.ref}, t.body))
    fail("forward: cannot send to {}", c.name(0));
  const auto deadline = Clock::now() + c.options_.request_timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto in = c.next_message(std::max(left, 0ms));
    if (!in)
      fail("forward: no result for micro-batch {} from {} within {} ms", id, c.name(c.plan_.size() - 1),
           c.options_.request_timeout.count());
    const size_t i = c.link_index(in->connection);
    if (const auto* e = as<net::ErrorReport>(*in))
      fail("forward: {} reported: {}", i < c.plan_.size() ? c.name(i) : std::string("a node"), e->message);
    const auto* h = as<net::Hidden>(*in);
    if (!h || h->micro_batch_id != id) continue;  // stale replies of an earlier failed request
    if (h->tokens.size() != batch.n_outputs())
      fail("forward: {} returned {} rows, expected {}", c.name(i), h->tokens.size(), batch.n_outputs());
    read_f32_tensor(h->hidden, in->body, h->tokens.size(), n_embd, out_rows, "Hidden");
    return;
  }
}

void RemoteLayers::reset_sequence(uint64_t seq_id) {
  Cluster& c = cluster_;
  if (seq_id > std::numeric_limits<uint32_t>::max()) fail("sequence id {} does not fit the wire's 32 bits", seq_id);
  c.check_links();
  for (auto& l : c.links_) l->connection->send(net::ResetSequence{{static_cast<uint32_t>(seq_id)}, false});
  c.round_trip_stats("reset_sequence");  // each node answers in order: the reset is applied
}

int64_t RemoteLayers::n_ctx() const { return cluster_.n_ctx_; }

}  // namespace baton::pipeline
