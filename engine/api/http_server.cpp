// Routes, authentication, error shaping, lifecycle, and the small endpoints (models, health,
// cluster, metrics, tokenize, detokenize). Generation is in generation_handler.cpp.
#include "engine/api/http_server.h"

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "engine/api/extra_routes.h"
#include "engine/api/http_server_impl.h"
#include "engine/api/access_log.h"
#include "engine/api/openai_response.h"
#include "engine/api/operator_metrics.h"
#include "engine/tokenizer/utf8.h"

namespace baton::api {

using nlohmann::json;

void send_json(httplib::Response& res, const json& body, int status) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& error) { send_json(res, error_body(error), error.status()); }

namespace {

// cpp-httplib's CPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH as Debian builds it.
constexpr size_t kFormBodyLimit = 8192;

const char* const kRoutes[] = {
    "/v1/completions", "/v1/chat/completions", "/v1/models",  "/health", "/v1/cluster", "/metrics", "/tokenize",
    "/detokenize",     "/v1/responses",        "/completion", "/models", "/props",      "/slots"};

// The metrics label of a path: a known route or "other" (keeps label cardinality bounded).
std::string route_label(const std::string& path) {
  for (const char* r : kRoutes)
    if (path == r) return r;
  return "other";
}

// Constant-time comparison of the presented key with the configured one (the length is not
// hidden).
bool same_key(const std::string& presented, const std::string& key) {
  if (presented.size() != key.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(presented[i] ^ key[i]);
  return diff == 0;
}

json node_json(const NodeView& n) {
  json j = {{"id", n.id},
            {"address", n.address},
            {"role", n.role},
            {"status", n.status},
            {"load", n.load},
            {"memory_total_bytes", n.memory_total_bytes ? json(n.memory_total_bytes) : json(nullptr)},  // null: unknown
            {"memory_used_bytes", n.memory_used_bytes},
            {"compute_ms_per_token", n.compute_ms_per_token}};
  j["layers"] = n.first_layer >= 0 ? json::array({n.first_layer, n.last_layer}) : json(nullptr);
  j["last_heartbeat_seconds"] = n.last_heartbeat_seconds >= 0 ? json(n.last_heartbeat_seconds) : json(nullptr);
  j["readings"] = n.readings;  // {} when the node sends none (an unknown value is absent)
  return j;
}

// Wraps a handler: an escaped exception becomes an error response, never a dropped connection.
template <class F>
httplib::Server::Handler guarded(F f) {
  return [f](const httplib::Request& req, httplib::Response& res) {
    try {
      f(req, res);
    } catch (const ApiError& e) {
      send_error(res, e);
    } catch (const std::exception& e) {
      spdlog::error("{} {}: {}", req.method, req.path, e.what());
      send_error(res, ApiError(500, "server_error", e.what()));
    }
  };
}

// The prompt cache's KV bytes per node: every entry's positions on each node's layers (F16 K
// and V rows); one "local" node in local mode.
void write_prompt_cache_bytes(MetricsWriter& w, const ServedModel& model, uint64_t positions) {
  const double per_layer = static_cast<double>(positions) * 2.0 * 2.0 * static_cast<double>(model.info().kv_dim);
  w.family("baton_prompt_cache_bytes", "gauge", "KV bytes each node holds for cached prompt prefixes.");
  const auto plan = model.plan();
  if (plan.empty())
    w.sample("baton_prompt_cache_bytes", per_layer * static_cast<double>(model.info().n_layer), {{"node", "local"}});
  for (const auto& p : plan)
    w.sample("baton_prompt_cache_bytes", per_layer * static_cast<double>(p.layers.size()), {{"node", p.node_id}});
}

// The pipeline's families: the coordinator's own measurements (every duration is a difference
// of two readings of one machine's clock) and the workers' busy time from their Stats replies.
void write_pipeline_metrics(MetricsWriter& w, const pipeline::ClusterMetrics& m,
                            const std::vector<pipeline::StageStats>& stats) {
  auto counter = [&](const char* name, const char* help, double v) {
    w.family(name, "counter", help);
    w.sample(name, v);
  };
  counter("baton_pipeline_passes_total", "Forward passes completed through the chain of workers.",
          static_cast<double>(m.passes));
  counter("baton_pipeline_failed_passes_total", "Forward passes lost to a pipeline error.",
          static_cast<double>(m.failed_passes));
  counter("baton_pipeline_tokens_total", "Token rows sent through the chain.", static_cast<double>(m.tokens));
  counter("baton_pipeline_round_trip_seconds_total",
          "Coordinator: Forward sent -> Hidden received, summed over passes.", m.round_trip_ms / 1e3);
  counter("baton_pipeline_network_seconds_total",
          "Round trip minus every stage's residence: all hops together (wire + serialisation).", m.network_ms / 1e3);
  w.family("baton_stage_compute_seconds_total", "counter", "Time each worker spent computing its layers.");
  for (const auto& s : m.stages)
    w.sample("baton_stage_compute_seconds_total", s.compute_ms / 1e3, {{"node", s.node_id}});
  w.family("baton_stage_residence_seconds_total", "counter",
           "Time between a worker receiving a frame and handing its result on (queue + compute + encode).");
  for (const auto& s : m.stages)
    w.sample("baton_stage_residence_seconds_total", s.residence_ms / 1e3, {{"node", s.node_id}});
  // Hops: coordinator -> first worker -> ... -> last worker -> coordinator.
  w.family("baton_hop_bytes_total", "counter", "Activation bytes sent over each hop of the pipeline.");
  if (!m.stages.empty())
    w.sample("baton_hop_bytes_total", m.bytes_to_first, {{"from", "coordinator"}, {"to", m.stages[0].node_id}});
  for (size_t i = 0; i < m.stages.size(); ++i)
    w.sample(
        "baton_hop_bytes_total", m.stages[i].bytes_out,
        {{"from", m.stages[i].node_id}, {"to", i + 1 < m.stages.size() ? m.stages[i + 1].node_id : "coordinator"}});
  // Per hop: sender's hand-over -> receiver's receipt through the link's probed clock offset
  // (docs/PROTOCOL.md "Per-hop network time"), summed over measured passes, and its error bound.
  w.family("baton_hop_network_seconds_total", "counter",
           "Network time of each hop (sender hand-over -> receiver has the frame), summed over measured passes.");
  for (const auto& h : m.hops)
    w.sample("baton_hop_network_seconds_total", h.network_ms / 1e3, {{"from", h.from}, {"to", h.to}});
  w.family("baton_hop_network_error_seconds_total", "counter",
           "Sum of the error bounds of baton_hop_network_seconds_total (clock offset estimates).");
  for (const auto& h : m.hops)
    w.sample("baton_hop_network_error_seconds_total", h.error_ms / 1e3, {{"from", h.from}, {"to", h.to}});
  w.family("baton_hop_measured_passes_total", "counter",
           "Passes whose hop time was measured (a clock estimate existed).");
  for (const auto& h : m.hops)
    w.sample("baton_hop_measured_passes_total", static_cast<double>(h.passes), {{"from", h.from}, {"to", h.to}});
  w.family("baton_stage_busy_seconds_total", "counter", "Time each worker spent on forward passes, as it reports.");
  for (const auto& st : stats) {
    auto busy = st.values.find("busy_ms");
    if (busy != st.values.end()) w.sample("baton_stage_busy_seconds_total", busy->second / 1e3, {{"node", st.node_id}});
  }
}

// The connection gate's limits and canned answers (gated_server.h) from the server's options.
GateOptions gate_options(const ServerOptions& o, size_t threads) {
  auto ms = [](double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); };
  if (!(o.header_timeout_s >= 0.001 && o.header_timeout_s <= 3600))
    fail("header timeout must be 0.001..3600 seconds, found {}", o.header_timeout_s);
  if (!(o.timeout_s >= 0.001 && o.timeout_s <= 86400))
    fail("timeout must be 0.001..86400 seconds, found {}", o.timeout_s);
  if (o.max_connections < 1) fail("max connections must be >= 1, found {}", o.max_connections);
  GateOptions g;
  g.gate.max_connections = static_cast<size_t>(o.max_connections);
  g.gate.header_timeout = ms(o.header_timeout_s);
  g.threads = threads;
  g.max_queued = std::max<size_t>(64, 2 * threads);
  g.max_body_bytes = o.max_body_bytes;
  g.timeout = ms(o.timeout_s);
  g.overloaded_body = dump(error_body(ApiError(503, "server_error", "the server is overloaded: retry later")));
  g.timed_out_body =
      dump(error_body(ApiError(408, "invalid_request_error",
                               fmt::format("the request headers did not arrive within {} s", o.header_timeout_s))));
  g.too_large_body = dump(error_body(ApiError(431, "invalid_request_error", "the request headers are too large")));
  return g;
}

}  // namespace

void HttpServer::Impl::install_routes() {
  using httplib::Request;
  using httplib::Response;
  server.Post("/v1/completions",
              guarded([this](const Request& q, Response& r) { handle_generation(q, r, Endpoint::kCompletions); }));
  server.Post("/v1/chat/completions",
              guarded([this](const Request& q, Response& r) { handle_generation(q, r, Endpoint::kChat); }));
  server.Get("/health", guarded([this](const Request&, Response& r) { handle_health(r); }));
  server.Get("/v1/cluster", guarded([this](const Request&, Response& r) { handle_cluster(r); }));
  server.Get("/metrics", guarded([this](const Request&, Response& r) { handle_metrics(r); }));
  server.Post("/tokenize", guarded([this](const Request& q, Response& r) { handle_tokenize(q, r); }));
  server.Post("/detokenize", guarded([this](const Request& q, Response& r) { handle_detokenize(q, r); }));
  install_webui_routes();
  install_model_routes(*this);
  install_responses_routes(*this);
  install_native_completion_routes(*this);

  server.set_pre_routing_handler([this](const Request& req, Response& res) {
    begin_access_record(req, res);
    // CORS first: an allowed origin's preflight is answered without the key (browsers send none).
    if (answer_cors(cors, req, res)) return httplib::Server::HandlerResponse::Handled;
    if (options.api_key.empty() || req.path == "/health" || (options.webui && is_webui_page(req.path)))
      return httplib::Server::HandlerResponse::Unhandled;
    std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (auth.empty()) {
      send_error(res, ApiError(401, "authentication_error", "missing API key: send 'Authorization: Bearer <key>'"));
    } else if (auth.compare(0, prefix.size(), prefix) != 0 || !same_key(auth.substr(prefix.size()), options.api_key)) {
      send_error(res, ApiError(401, "authentication_error", "invalid API key"));
    } else {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    res.set_header("WWW-Authenticate", "Bearer");
    // The refused request's body is not read: close, so its bytes are never parsed as the next
    // request on this keep-alive connection.
    res.set_header("Connection", "close");
    return httplib::Server::HandlerResponse::Handled;
  });

  // Responses httplib makes itself (unknown route 404, body too large 413, unparsable HTTP 400)
  // get the OpenAI error body too.
  server.set_error_handler([this](const Request& req, Response& res) {
    if (GatedServer::current_request_over_body_limit()) {  // httplib says 400 for a cut chunked body
      res.status = 413;
      res.set_header("Connection", "close");
    }
    if (!res.body.empty() || res.content_length_ > 0) return;
    if (res.status == 404)
      send_error(res, ApiError(404, "not_found_error", fmt::format("no route for {} {}", req.method, req.path)));
    else if (res.status == 413 && req.get_header_value("Content-Type").starts_with("application/x-www-form-urlencoded"))
      // cpp-httplib (a shared library: its limit cannot be raised from here) caps form bodies at
      // 8 KiB; curl -d sends that type unless told otherwise.
      send_error(res, ApiError(413, "invalid_request_error",
                               fmt::format("the request body is larger than {} bytes allowed for Content-Type "
                                           "application/x-www-form-urlencoded; send the JSON with 'Content-Type: "
                                           "application/json' (up to {} bytes)",
                                           kFormBodyLimit, options.max_body_bytes)));
    else if (res.status == 413)
      send_error(res, ApiError(413, "invalid_request_error",
                               fmt::format("the request body is larger than {} bytes", options.max_body_bytes)));
    else send_error(res, ApiError(res.status, "invalid_request_error", fmt::format("HTTP error {}", res.status)));
  });

  server.set_logger([this](const Request& req, const Response& res) {
    metrics.count_request(route_label(req.path), res.status);
    log_access(req, res);
  });
}

void HttpServer::Impl::handle_health(httplib::Response& res) {
  ClusterViewSnapshot snap = model.cluster_view().snapshot();
  bool all_online =
      std::all_of(snap.nodes.begin(), snap.nodes.end(), [](const NodeView& n) { return n.status == "online"; });
  serving::SchedulerStats s = model.scheduler().stats();
  json nodes = json::array();
  for (const auto& n : snap.nodes) nodes.push_back(node_json(n));
  json body = {{"status", !snap.ready || stopping ? "unavailable"
                          : all_online            ? "ok"
                                                  : "degraded"},
               {"layers_covered", snap.layers_covered},
               {"n_layer", snap.n_layer},
               {"slots", model.scheduler().options().slots},
               {"slots_active", s.active},
               {"queued", s.queued},
               {"nodes", nodes}};
  if (!snap.detail.empty()) body["detail"] = snap.detail;
  send_json(res, body, snap.ready && !stopping ? 200 : 503);
}

void HttpServer::Impl::handle_cluster(httplib::Response& res) {
  ClusterViewSnapshot snap = model.cluster_view().snapshot();
  json nodes = json::array();
  for (const auto& n : snap.nodes) nodes.push_back(node_json(n));
  send_json(res, json{{"ready", snap.ready},
                      {"layers_covered", snap.layers_covered},
                      {"n_layer", snap.n_layer},
                      {"detail", snap.detail},
                      {"nodes", nodes}});
}

void HttpServer::Impl::handle_metrics(httplib::Response& res) {
  MetricsWriter w;
  metrics.write(w);
  serving::SchedulerStats s = model.scheduler().stats();
  auto gauge = [&](const char* name, const char* help, double v) {
    w.family(name, "gauge", help);
    w.sample(name, v);
  };
  auto counter = [&](const char* name, const char* help, double v) {
    w.family(name, "counter", help);
    w.sample(name, v);
  };
  gauge("baton_queue_depth", "Requests waiting for a slot.", s.queued);
  gauge("baton_active_slots", "Sequences being generated.", s.active);
  gauge("baton_slots", "Sequences that can be generated at once.", model.scheduler().options().slots);
  counter("baton_requests_accepted_total", "Generation requests accepted by the scheduler.",
          static_cast<double>(s.requests));
  counter("baton_requests_rejected_total", "Generation requests refused because the queue was full (503).",
          static_cast<double>(s.rejected));
  counter("baton_requests_failed_total", "Generation requests that ended in an error (e.g. a pipeline failure).",
          static_cast<double>(s.failed));
  counter("baton_prompt_tokens_total", "Prompt tokens processed.", static_cast<double>(s.prompt_tokens));
  counter("baton_generated_tokens_total", "Tokens generated.", static_cast<double>(s.generated_tokens));
  counter("baton_forward_passes_total", "Forward passes (micro-batches) run.", static_cast<double>(s.forward_passes));
  counter("baton_forward_seconds_total", "Wall time inside the layer runner.", s.forward_seconds);
  counter("baton_prompt_cache_tokens_total", "Prompt tokens served from a cached prefix's KV (cache_prompt).",
          static_cast<double>(s.cached_prompt_tokens));
  counter("baton_prompt_cache_hits_total", "Requests that reused a cached prefix.", static_cast<double>(s.cache_hits));
  gauge("baton_prompt_cache_entries", "Finished sequences whose KV is kept for reuse (on every stage).",
        s.cache_entries);
  gauge("baton_prompt_cache_positions", "Positions those entries hold.", static_cast<double>(s.cache_positions));
  write_prompt_cache_bytes(w, model, s.cache_positions);
  counter("baton_spec_draft_tokens_total", "Draft tokens sent through the layers (speculative decoding).",
          static_cast<double>(s.speculation.drafted));
  counter("baton_spec_accepted_tokens_total", "Of those, kept (each saves one pass).",
          static_cast<double>(s.speculation.accepted));
  counter("baton_spec_passes_total", "Verification passes (a generated token with its draft).",
          static_cast<double>(s.speculation.passes));

  if (auto cm = model.cluster_metrics()) write_pipeline_metrics(w, *cm, model.stage_stats());
  write_build_info(w);
  write_process_metrics(w);
  write_node_metrics(w, model.cluster_view().snapshot());
  res.status = 200;
  res.set_content(w.text(), "text/plain; version=0.0.4; charset=utf-8");
}

void HttpServer::Impl::handle_tokenize(const httplib::Request& req, httplib::Response& res) {
  TokenizeRequest t = parse_tokenize_request(req.body);
  const auto& tok = model.tokenizer();
  std::vector<int32_t> ids = tok.encode(t.content, t.add_special, /*parse_special=*/true);
  json tokens = json::array();
  for (int32_t id : ids) {
    if (!t.with_pieces) {
      tokens.push_back(id);
      continue;
    }
    std::string piece = tok.token_to_piece(id, true);
    json p = piece;
    if (tokenizer::utf8_sanitize(piece) != piece) {  // part of a character: its bytes
      p = json::array();
      for (unsigned char c : piece) p.push_back(static_cast<int>(c));
    }
    tokens.push_back(json{{"id", id}, {"piece", p}});
  }
  send_json(res, json{{"tokens", tokens}});
}

void HttpServer::Impl::handle_detokenize(const httplib::Request& req, httplib::Response& res) {
  std::vector<int32_t> ids = parse_detokenize_request(req.body);
  const auto& tok = model.tokenizer();
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] >= tok.n_vocab())
      throw bad_request(
          fmt::format("tokens[{}]", i),
          fmt::format("'tokens[{}]' = {} is outside the vocabulary (n_vocab = {})", i, ids[i], tok.n_vocab()));
  send_json(res, json{{"content", tok.decode(ids)}});
}

HttpServer::HttpServer(ServedModel& model, ServerOptions options)
    : impl_(std::make_unique<Impl>(model, std::move(options))) {
  auto& o = impl_->options;
  // One thread per request that can be running or queued in the scheduler, plus a few for the
  // other routes: beyond that, requests wait for a thread instead of reaching the 503 check.
  const auto& so = model.scheduler().options();
  size_t threads = o.threads > 0 ? static_cast<size_t>(o.threads)
                                 : static_cast<size_t>(std::min(so.slots + so.queue_limit + 8, 1024));
  impl_->server.configure(gate_options(o, threads));
  impl_->server.set_payload_max_length(o.max_body_bytes);
  impl_->server.set_keep_alive_timeout(5);
  impl_->install_routes();
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
  auto& s = impl_->server;
  const auto& o = impl_->options;
  impl_->port = s.bind(o.host, o.port);
  if (impl_->port < 0) {
    const int err = s.bind_errno();
    fail("cannot listen on {}:{}: {}", o.host, o.port,
         err == EADDRINUSE ? std::string("address in use (another process listens on that port)")
                           : fmt::format("bind failed ({})", err ? std::strerror(err) : "unknown error"));
  }
  impl_->model.set_address(fmt::format("{}:{}", o.host, impl_->port));
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  // The socket is already listening (connections queue in its backlog), so no wait is needed
  // for correctness; wait for the accept loop anyway so is_running() is true on return.
  for (int i = 0; i < 500 && !s.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

int HttpServer::port() const { return impl_->port; }

void HttpServer::stop() {
  if (!impl_->thread.joinable()) return;
  impl_->stopping = true;  // handlers cancel their requests and return
  impl_->server.stop();
  impl_->thread.join();
  impl_->server.stop_connections();
}

HttpMetrics& HttpServer::metrics() { return impl_->metrics; }

std::string HttpServer::serve_bytes(std::string input) { return impl_->server.serve_bytes(std::move(input)); }

}  // namespace baton::api
