// Prometheus text exposition (format 0.0.4) for the HTTP API: labelled counters and
// histograms the server updates as requests go, plus gauges and counters sampled at scrape
// time (scheduler and pipeline stats) through MetricsWriter.
// Thread-safety: every method of HttpMetrics may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace baton::api {

// Cumulative-bucket histogram (seconds).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double value);
  // name_bucket{le=...}, name_sum, name_count lines (the caller holds the lock).
  void write(std::string& out, const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; last = +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

// Appends one metric family at a time: "# HELP", "# TYPE" and its samples.
class MetricsWriter {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;
  void family(const std::string& name, const char* type, const std::string& help);
  void sample(const std::string& name, double value, const Labels& labels = {});
  std::string& text() { return out_; }

 private:
  std::string out_;
};

// Label values escaped for the text format (backslash, quote, newline).
std::string escape_label(const std::string& value);

class HttpMetrics {
 public:
  HttpMetrics();
  // One finished HTTP request: endpoint is the route ("/v1/completions", or "other").
  void count_request(const std::string& endpoint, int status);
  void count_stream_cancelled();
  // A non-streaming request cancelled because its client closed the connection.
  void count_request_disconnected();
  void observe_time_to_first_token(double seconds);
  void observe_inter_token(double seconds);
  // Writes the families above.
  void write(MetricsWriter& w) const;
  // The last kRecentTtft times to first token (seconds, oldest first), for the dashboard's
  // p50/p95 of recent requests (the histogram's buckets are too coarse for that).
  static constexpr size_t kRecentTtft = 256;
  std::vector<double> recent_time_to_first_token() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t streams_cancelled_ = 0;
  uint64_t requests_disconnected_ = 0;
  Histogram ttft_;
  Histogram inter_token_;
  std::vector<double> recent_ttft_;  // ring of kRecentTtft
  size_t recent_ttft_next_ = 0;
};

}  // namespace baton::api
