// The web UI's routes: GET / and GET /dashboard (the page, engine/api/webui/index.html),
// GET /webui/<file> (its scripts and style, embedded at build time: webui_assets.h), and
// GET /v1/dashboard (the dashboard's data, dashboard.h). The page is same-origin: it calls the
// API it came from, with the key it asks for once when the server wants one.
#include <spdlog/spdlog.h>

#include "engine/api/dashboard.h"
#include "engine/api/http_server_impl.h"
#include "engine/api/webui_assets.h"

namespace baton::api {

namespace {

const WebAsset* find_asset(std::string_view name) {
  for (const auto& a : web_assets())
    if (a.name == name) return &a;
  return nullptr;
}

const char* content_type(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  return "application/octet-stream";
}

void send_asset(httplib::Response& res, const WebAsset& asset) {
  res.status = 200;
  // Revalidated on every load: a rebuilt server never runs with an old script.
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Content-Type-Options", "nosniff");
  // Everything the page needs comes from this server; no inline script runs.
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                 "connect-src 'self'; frame-ancestors 'none'");
  res.set_content(std::string(asset.body), content_type(asset.name));
}

}  // namespace

bool is_webui_page(const std::string& path) {
  return path == "/" || path == "/dashboard" || path.starts_with("/webui/");
}

void HttpServer::Impl::install_webui_routes() {
  using httplib::Request;
  using httplib::Response;
  server.Get("/v1/dashboard", [this](const Request& req, Response& res) {
    try {
      handle_dashboard(res);
    } catch (const std::exception& e) {
      spdlog::error("{} {}: {}", req.method, req.path, e.what());
      send_error(res, ApiError(500, "server_error", e.what()));
    }
  });
  if (!options.webui) return;
  auto page = [](const Request&, Response& res) {
    const WebAsset* index = find_asset("index.html");
    if (!index) throw std::logic_error("the web UI was built without index.html");
    send_asset(res, *index);
  };
  server.Get("/", page);
  server.Get("/dashboard", page);
  server.Get(R"(/webui/([A-Za-z0-9_.-]+))", [](const Request& req, Response& res) {
    const WebAsset* asset = find_asset(req.matches[1].str());
    if (asset) send_asset(res, *asset);
    else res.status = 404;  // the error handler writes the body
  });
}

void HttpServer::Impl::handle_dashboard(httplib::Response& res) {
  DashboardInputs in;
  in.model_id = model.info().id;
  in.now = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  in.cluster = model.cluster_view().snapshot();
  in.metrics = model.cluster_metrics();
  in.scheduler = model.scheduler().stats();
  in.slots = model.scheduler().options().slots;
  in.recent_ttft_seconds = metrics.recent_time_to_first_token();
  dashboard_history.sample(in.now, in.scheduler.generated_tokens, in.metrics);
  in.history = dashboard_history.points();
  res.set_header("Cache-Control", "no-store");
  send_json(res, dashboard_json(in));
}

}  // namespace baton::api
