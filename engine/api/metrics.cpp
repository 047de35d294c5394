// Prometheus text format: https://prometheus.io/docs/instrumenting/exposition_formats/
#include "engine/api/metrics.h"

#include <fmt/format.h>

#include <cmath>

namespace baton::api {

std::string escape_label(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

namespace {
std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}
}  // namespace

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::write(std::string& out, const std::string& name) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, le, cumulative);
  }
  out += fmt::format("{}_sum {}\n{}_count {}\n", name, number(sum_), name, count_);
}

void MetricsWriter::family(const std::string& name, const char* type, const std::string& help) {
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void MetricsWriter::sample(const std::string& name, double value, const Labels& labels) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i)
      out_ += fmt::format("{}{}=\"{}\"", i ? "," : "", labels[i].first, escape_label(labels[i].second));
    out_ += '}';
  }
  out_ += ' ';
  out_ += number(value);
  out_ += '\n';
}

HttpMetrics::HttpMetrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      inter_token_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}) {}

void HttpMetrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard lock(mutex_);
  ++requests_[{endpoint, status}];
}

void HttpMetrics::count_stream_cancelled() {
  std::lock_guard lock(mutex_);
  ++streams_cancelled_;
}

void HttpMetrics::count_request_disconnected() {
  std::lock_guard lock(mutex_);
  ++requests_disconnected_;
}

void HttpMetrics::observe_time_to_first_token(double seconds) {
  std::lock_guard lock(mutex_);
  ttft_.observe(seconds);
  if (recent_ttft_.size() < kRecentTtft) recent_ttft_.push_back(seconds);
  else recent_ttft_[recent_ttft_next_] = seconds;
  recent_ttft_next_ = (recent_ttft_next_ + 1) % kRecentTtft;
}

std::vector<double> HttpMetrics::recent_time_to_first_token() const {
  std::lock_guard lock(mutex_);
  if (recent_ttft_.size() < kRecentTtft) return recent_ttft_;
  std::vector<double> out(recent_ttft_.begin() + static_cast<std::ptrdiff_t>(recent_ttft_next_), recent_ttft_.end());
  out.insert(out.end(), recent_ttft_.begin(), recent_ttft_.begin() + static_cast<std::ptrdiff_t>(recent_ttft_next_));
  return out;
}

void HttpMetrics::observe_inter_token(double seconds) {
  std::lock_guard lock(mutex_);
  inter_token_.observe(seconds);
}

void HttpMetrics::write(MetricsWriter& w) const {
  std::lock_guard lock(mutex_);
  w.family("baton_http_requests_total", "counter", "HTTP requests answered, by endpoint and status code.");
  for (const auto& [key, n] : requests_)
    w.sample("baton_http_requests_total", static_cast<double>(n),
             {{"endpoint", key.first}, {"status", std::to_string(key.second)}});
  w.family("baton_http_errors_total", "counter",
           "HTTP requests answered with a status >= 400, by endpoint and status.");
  for (const auto& [key, n] : requests_)
    if (key.second >= 400)
      w.sample("baton_http_errors_total", static_cast<double>(n),
               {{"endpoint", key.first}, {"status", std::to_string(key.second)}});
  w.family("baton_streams_cancelled_total", "counter", "Streaming responses whose client went away before the end.");
  w.sample("baton_streams_cancelled_total", static_cast<double>(streams_cancelled_));
  w.family("baton_requests_disconnected_total", "counter",
           "Non-streaming requests cancelled because their client closed the connection before the answer.");
  w.sample("baton_requests_disconnected_total", static_cast<double>(requests_disconnected_));
  w.family("baton_time_to_first_token_seconds", "histogram", "From request arrival to the first generated token.");
  ttft_.write(w.text(), "baton_time_to_first_token_seconds");
  w.family("baton_inter_token_latency_seconds", "histogram", "Time between consecutive tokens of one response.");
  inter_token_.write(w.text(), "baton_inter_token_latency_seconds");
}

}  // namespace baton::api
