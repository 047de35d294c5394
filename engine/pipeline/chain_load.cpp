#include "engine/pipeline/chain.h"
#include "engine/pipeline/chain_link.h"
#include "engine/pipeline/load_progress.h"

#include <spdlog/spdlog.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <random>

#include "engine/base/error.h"
#include "engine/pipeline/wire.h"

namespace baton::pipeline {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

void Chain::load_all(bool initial) {
  std::random_device rd;
  const uint64_t load_id = (uint64_t{rd()} << 32) | rd();
  for (size_t i = 0; i < plan_.size(); ++i) {
    net::Prepare p;
    p.load_id = load_id;
    p.model_identity = identity_;
    p.model_path_hint = model_path_;
    p.layer_first = static_cast<uint32_t>(plan_[i].layers.begin);
    p.layer_last = static_cast<uint32_t>(plan_[i].layers.last());
    p.activation_dtype = activations_;
    if (i + 1 < plan_.size()) p.next_hop = net::NextHop{plan_[i + 1].host, plan_[i + 1].port, plan_[i + 1].node_id};
    p.n_ctx = static_cast<uint64_t>(std::max<int64_t>(n_ctx_, 0));  // net::check_message bounds it
    p.max_sequences = static_cast<uint32_t>(std::max(options_.max_sequences, 0));
    p.options = {{kOptionCoordinator, options_.coordinator_id}};
    if (options_.take_over) p.options.push_back({kOptionTakeOver, "1"});
    links_[i]->connection->send(p);
  }
  std::vector<bool> ready(plan_.size(), false);
  std::vector<std::string> failures;
  const auto deadline = Clock::now() + chain_seconds_ms(options_.load_timeout_s);
  size_t n_ready = 0;
  uint64_t bytes_ready = 0;
  const auto progress = LoadProgress::current();
  auto tell_progress = [&] {
    if (!progress) return;
    std::vector<std::string> pending;
    for (size_t i = 0; i < plan_.size(); ++i)
      if (!ready[i]) pending.push_back(plan_[i].node_id);
    progress->ready(n_ready, bytes_ready);
    progress->pending(std::move(pending));
  };
  if (progress) progress->begin("loading", plan_.size(), chain_seconds_ms(options_.load_timeout_s));
  tell_progress();
  try {
    while (n_ready + failures.size() < plan_.size()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      auto in = next_message(std::max(left, 0ms));
      if (!in) {
        std::vector<std::string> silent;
        for (size_t i = 0; i < plan_.size(); ++i)
          if (!ready[i]) silent.push_back(name(i));
        failures.push_back(
            fmt::format("{} did not answer within {} s", fmt::join(silent, ", "), options_.load_timeout_s));
        break;
      }
      const size_t i = link_index(in->connection);
      if (i == links_.size()) continue;
      if (const auto* r = message_as<net::Ready>(*in); r && r->load_id == load_id && !ready[i]) {
        ready[i] = true;
        ++n_ready;
        bytes_ready += r->memory_bytes;
        tell_progress();
        spdlog::debug("{} ready: {} bytes, {} ms", name(i), r->memory_bytes, r->load_ms);
      } else if (const auto* f = message_as<net::Failed>(*in); f && f->load_id == load_id) {
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

std::vector<StageStats> Chain::round_trip_stats(const char* what) {
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
    if (message_as<net::Hidden>(*in)) {
      layers_.take(*in);  // a pass in flight finished meanwhile
      continue;
    }
    if (const auto* s = message_as<net::Stats>(*in); s && !got[i]) {
      got[i] = true;
      ++n;
      out[i].node_id = plan_[i].node_id;
      for (const auto& e : s->entries) out[i].values[e.name] = e.value;
    } else if (const auto* e = message_as<net::ErrorReport>(*in)) {
      fail("{}: {} reported: {}", what, name(i), e->message);
    }
  }
  return out;
}

std::vector<StageStats> Chain::stats() { return round_trip_stats("stats"); }

ClusterMetrics Chain::metrics() const {
  std::lock_guard lock(metrics_mutex_);
  return metrics_;
}

}  // namespace baton::pipeline
