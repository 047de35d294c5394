// Internal to http_server.cpp and generation_handler.cpp: the server's state and the helpers
// that write JSON and error responses. Includes httplib.h; nothing else should.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/api/api_error.h"
#include "engine/api/gated_server.h"
#include "engine/api/dashboard.h"
#include "engine/api/cors.h"
#include "engine/api/http_server.h"
#include "engine/api/openai_request.h"

namespace baton::api {

struct HttpServer::Impl {
  Impl(ServedModel& m, ServerOptions o) : model(m), options(std::move(o)), cors(options.cors_origins) {}

  void install_routes();
  // POST /v1/completions and /v1/chat/completions (generation_handler.cpp).
  void handle_generation(const httplib::Request& req, httplib::Response& res, Endpoint endpoint);
  void handle_health(httplib::Response& res);
  void handle_cluster(httplib::Response& res);
  void handle_metrics(httplib::Response& res);
  void handle_tokenize(const httplib::Request& req, httplib::Response& res);
  void handle_detokenize(const httplib::Request& req, httplib::Response& res);
  // GET /, /dashboard, /webui/<file> (unless --no-webui) and GET /v1/dashboard (webui_routes.cpp).
  void install_webui_routes();
  void handle_dashboard(httplib::Response& res);

  ServedModel& model;
  ServerOptions options;
  CorsPolicy cors;
  GatedServer server;  // httplib's, behind our connection gate (gated_server.h)
  HttpMetrics metrics;
  std::thread thread;
  std::atomic<bool> stopping{false};
  int port = 0;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  DashboardHistory dashboard_history;
};

// The web UI's page and files: served without the API key (a browser cannot send it when it
// navigates); the page then asks for the key and sends it with its API calls.
bool is_webui_page(const std::string& path);

void send_json(httplib::Response& res, const nlohmann::json& body, int status = 200);
void send_error(httplib::Response& res, const ApiError& error);
// Adds Access-Control-Allow-Origin (and Vary) for an allowed origin; answers an OPTIONS preflight
// (204, true: nothing else runs). cors.cpp.
bool answer_cors(const CorsPolicy& cors, const httplib::Request& req, httplib::Response& res);

}  // namespace baton::api
