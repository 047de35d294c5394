#include "engine/api/dashboard.h"

#include <algorithm>
#include <cmath>

namespace baton::api {

using nlohmann::json;

void DashboardHistory::sample(double now, uint64_t generated_tokens,
                              const std::optional<pipeline::ClusterMetrics>& metrics) {
  std::lock_guard lock(mutex_);
  if (last_.t >= 0 && now - last_.t < interval_) return;
  Counters c;
  c.t = now;
  c.generated = generated_tokens;
  if (metrics) {
    c.pipeline_tokens = metrics->tokens;
    for (const auto& s : metrics->stages) c.stage_compute_ms.emplace_back(s.node_id, s.compute_ms);
  }
  if (last_.t >= 0) {
    Point p;
    p.t = now;
    const double dt = now - last_.t;
    p.tokens_per_second = c.generated >= last_.generated ? static_cast<double>(c.generated - last_.generated) / dt : 0;
    // A re-plan restarts the pipeline's counters: no per-stage figure across it.
    const bool same_pipeline =
        c.pipeline_tokens >= last_.pipeline_tokens && c.stage_compute_ms.size() == last_.stage_compute_ms.size();
    const uint64_t tokens = same_pipeline ? c.pipeline_tokens - last_.pipeline_tokens : 0;
    for (size_t i = 0; tokens > 0 && i < c.stage_compute_ms.size(); ++i) {
      if (c.stage_compute_ms[i].first != last_.stage_compute_ms[i].first) continue;
      const double ms = c.stage_compute_ms[i].second - last_.stage_compute_ms[i].second;
      p.stage_ms_per_token.emplace_back(c.stage_compute_ms[i].first, std::max(0.0, ms) / static_cast<double>(tokens));
    }
    points_.push_back(std::move(p));
  }
  last_ = std::move(c);
  while (!points_.empty() && now - points_.front().t > window_) points_.pop_front();
}

std::vector<DashboardHistory::Point> DashboardHistory::points() const {
  std::lock_guard lock(mutex_);
  return {points_.begin(), points_.end()};
}

std::optional<double> quantile(std::vector<double> values, double q) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  // Nearest rank: the smallest value with at least q of the values at or below it.
  const double rank = std::ceil(q * static_cast<double>(values.size()));
  const size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return values[std::min(index, values.size() - 1)];
}

namespace {

json or_null(std::optional<double> v, double scale = 1) { return v ? json(*v * scale) : json(nullptr); }

json dashboard_node_json(const NodeView& n, const std::optional<pipeline::ClusterMetrics>& metrics) {
  json j = {{"id", n.id},
            {"address", n.address},
            {"role", n.role},
            {"status", n.status},
            {"reason", n.reason},
            {"load", n.load},
            {"memory_total_bytes", n.memory_total_bytes ? json(n.memory_total_bytes) : json(nullptr)},  // null: unknown
            {"memory_used_bytes", n.memory_used_bytes},
            {"compute_ms_per_token", n.compute_ms_per_token}};
  j["layers"] = n.first_layer >= 0 ? json::array({n.first_layer, n.last_layer}) : json(nullptr);
  j["last_heartbeat_seconds"] = n.last_heartbeat_seconds >= 0 ? json(n.last_heartbeat_seconds) : json(nullptr);
  // The coordinator's own measurement of the stage wins over the worker's report (the same
  // figure /metrics exports as baton_stage_compute_seconds_total).
  if (metrics && metrics->tokens > 0)
    for (const auto& s : metrics->stages)
      if (s.node_id == n.id) j["compute_ms_per_token"] = s.compute_ms / static_cast<double>(metrics->tokens);
  return j;
}

}  // namespace

json dashboard_json(const DashboardInputs& in) {
  const auto& snap = in.cluster;
  json nodes = json::array();
  for (const auto& n : snap.nodes) nodes.push_back(dashboard_node_json(n, in.metrics));
  json hops = json::array();
  json pipeline = nullptr;
  if (in.metrics) {
    const auto& m = *in.metrics;
    for (const auto& h : m.hops)
      hops.push_back(
          {{"from", h.from},
           {"to", h.to},
           {"bytes", h.bytes},
           {"bytes_per_token", h.tokens > 0 ? json(h.bytes / static_cast<double>(h.tokens)) : json(nullptr)},
           {"network_ms_per_pass", h.passes > 0 ? json(h.network_ms / static_cast<double>(h.passes)) : json(nullptr)},
           {"passes", h.passes}});
    const double passes = static_cast<double>(m.passes);
    pipeline = {{"passes", m.passes},
                {"tokens", m.tokens},
                {"failed_passes", m.failed_passes},
                {"activations", m.activations},
                {"round_trip_ms_per_pass", m.passes > 0 ? json(m.round_trip_ms / passes) : json(nullptr)},
                {"network_ms_per_pass", m.passes > 0 ? json(m.network_ms / passes) : json(nullptr)}};
  }
  // "Now": the last interval of the history, unless it is stale (nobody polled for a while).
  double tokens_per_second = 0;
  if (!in.history.empty() && in.now - in.history.back().t < 3.0)
    tokens_per_second = in.history.back().tokens_per_second;
  json totals = {{"tokens_per_second", tokens_per_second},
                 {"queue_depth", in.scheduler.queued},
                 {"active_sequences", in.scheduler.active},
                 {"slots", in.slots},
                 {"requests", in.scheduler.requests},
                 {"generated_tokens", in.scheduler.generated_tokens},
                 {"ttft_p50_ms", or_null(quantile(in.recent_ttft_seconds, 0.5), 1e3)},
                 {"ttft_p95_ms", or_null(quantile(in.recent_ttft_seconds, 0.95), 1e3)},
                 {"ttft_samples", in.recent_ttft_seconds.size()}};
  json history = json::array();
  for (const auto& p : in.history) {
    json stages = json::object();
    for (const auto& [id, ms] : p.stage_ms_per_token) stages[id] = ms;
    history.push_back({{"t", p.t}, {"tokens_per_second", p.tokens_per_second}, {"stage_ms_per_token", stages}});
  }
  return {{"model", in.model_id},    {"time", in.now},
          {"ready", snap.ready},     {"detail", snap.detail},
          {"n_layer", snap.n_layer}, {"layers_covered", snap.layers_covered},
          {"nodes", nodes},          {"hops", hops},
          {"pipeline", pipeline},    {"totals", totals},
          {"history", history}};
}

}  // namespace baton::api
