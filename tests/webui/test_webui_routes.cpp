// The web UI's routes over a real socket (GET /, /dashboard, /webui/<file>, GET /v1/dashboard),
// its API-key rule (the page is public, the data is not), --no-webui, and the dashboard's
// history and quantiles.
#include <catch2/catch.hpp>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "api/api_test_util.h"
#include "engine/api/dashboard.h"
#include "engine/api/webui_assets.h"

using nlohmann::json;

TEST_CASE("GET / serves the embedded chat page and its files", "[webui]") {
  baton::test::LocalServer s;
  httplib::Client c("127.0.0.1", s.port());
  auto page = c.Get("/");
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->get_header_value("Content-Type") == "text/html; charset=utf-8");
  CHECK(page->get_header_value("Content-Security-Policy").find("default-src 'self'") != std::string::npos);
  CHECK(page->body.find("<script src=\"/webui/chat.js\"></script>") != std::string::npos);
  auto dashboard = c.Get("/dashboard");
  REQUIRE(dashboard);
  CHECK(dashboard->status == 200);
  CHECK(dashboard->body == page->body);  // one page; the script picks the view from the path
  // Every file the page names is served, byte for byte the embedded one.
  for (const char* name : {"api.js", "chat.js", "dashboard.js", "main.js", "style.css"}) {
    INFO(name);
    CHECK(page->body.find(std::string("/webui/") + name) != std::string::npos);
    auto file = c.Get(std::string("/webui/") + name);
    REQUIRE(file);
    CHECK(file->status == 200);
    std::string_view embedded;
    for (const auto& a : baton::api::web_assets())
      if (a.name == name) embedded = a.body;
    CHECK(!embedded.empty());
    CHECK(file->body == embedded);
  }
  CHECK(c.Get("/webui/chat.js")->get_header_value("Content-Type") == "text/javascript; charset=utf-8");
  auto missing = c.Get("/webui/missing.js");
  REQUIRE(missing);
  CHECK(missing->status == 404);
  CHECK(json::parse(missing->body)["error"]["type"] == "not_found_error");
}

TEST_CASE("GET /v1/dashboard reports the node, the queue and the recent time to first token", "[webui]") {
  baton::test::LocalServer s;
  httplib::Client c("127.0.0.1", s.port());
  auto d = json::parse(c.Get("/v1/dashboard")->body);
  CHECK(d["model"] == "stories260K");
  CHECK(d["ready"] == true);
  REQUIRE(d["nodes"].size() == 1);
  CHECK(d["nodes"][0]["status"] == "online");
  CHECK(d["nodes"][0]["layers"] == json::array({0, 4}));
  CHECK(d["hops"].empty());
  CHECK(d["pipeline"].is_null());  // one process: no pipeline measurements
  CHECK(d["totals"]["queue_depth"] == 0);
  CHECK(d["totals"]["ttft_p50_ms"].is_null());
  CHECK(d["history"].is_array());

  auto res =
      c.Post("/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 5, "temperature": 0, "stream": true})",
             "application/json");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  d = json::parse(c.Get("/v1/dashboard")->body);
  CHECK(d["totals"]["requests"] == 1);
  CHECK(d["totals"]["generated_tokens"] == 5);
  CHECK(d["totals"]["ttft_samples"] == 1);
  CHECK(d["totals"]["ttft_p50_ms"].get<double>() > 0);
  CHECK(d["totals"]["ttft_p95_ms"] == d["totals"]["ttft_p50_ms"]);
  CHECK(d["nodes"][0]["compute_ms_per_token"].get<double>() > 0);
}

TEST_CASE("with an API key the page is public and the dashboard data is not, and --no-webui drops the page",
          "[webui]") {
  baton::api::ServerOptions keyed;
  keyed.api_key = "k1";
  baton::test::LocalServer s({}, keyed);
  httplib::Client c("127.0.0.1", s.port());
  CHECK(c.Get("/")->status == 200);
  CHECK(c.Get("/dashboard")->status == 200);
  CHECK(c.Get("/webui/chat.js")->status == 200);
  CHECK(c.Get("/v1/dashboard")->status == 401);
  CHECK(c.Get("/v1/dashboard", {{"Authorization", "Bearer k1"}})->status == 200);

  baton::api::ServerOptions off;
  off.webui = false;
  off.api_key = "k2";
  baton::test::LocalServer t({}, off);
  httplib::Client d("127.0.0.1", t.port());
  CHECK(d.Get("/")->status == 401);  // no public page any more: every route but /health wants the key
  CHECK(d.Get("/", {{"Authorization", "Bearer k2"}})->status == 404);
  CHECK(d.Get("/webui/chat.js", {{"Authorization", "Bearer k2"}})->status == 404);
  CHECK(d.Get("/v1/dashboard", {{"Authorization", "Bearer k2"}})->status == 200);  // the data endpoint stays
}

TEST_CASE("DashboardHistory: rates between samples, per-stage ms per token, a re-plan, the window", "[webui]") {
  baton::api::DashboardHistory h(1.0, 10.0);
  baton::pipeline::ClusterMetrics m;
  m.tokens = 100;
  m.stages = {{"a", 50, 60, 0}, {"b", 20, 25, 0}};
  h.sample(0, 0, m);
  CHECK(h.points().empty());  // a rate needs two samples
  h.sample(0.5, 5, m);
  CHECK(h.points().empty());  // within the interval: ignored
  m.tokens = 120;
  m.stages = {{"a", 70, 80, 0}, {"b", 30, 36, 0}};
  h.sample(2, 40, m);
  auto p = h.points();
  REQUIRE(p.size() == 1);
  CHECK(p[0].tokens_per_second == Approx(20));
  REQUIRE(p[0].stage_ms_per_token.size() == 2);
  CHECK(p[0].stage_ms_per_token[0] == std::make_pair(std::string("a"), 1.0));  // 20 ms over 20 tokens
  CHECK(p[0].stage_ms_per_token[1].second == Approx(0.5));
  // A re-plan restarts the pipeline's counters: no per-stage figure across it.
  m.tokens = 4;
  m.stages = {{"a", 2, 3, 0}};
  h.sample(3, 44, m);
  REQUIRE(h.points().size() == 2);
  CHECK(h.points()[1].stage_ms_per_token.empty());
  CHECK(h.points()[1].tokens_per_second == Approx(4));
  h.sample(20, 44, m);  // the first two points are older than the window
  REQUIRE(h.points().size() == 1);
  CHECK(h.points()[0].tokens_per_second == 0);

  CHECK(!baton::api::quantile({}, 0.5));
  CHECK(*baton::api::quantile({3, 1, 2}, 0.5) == 2);
  CHECK(*baton::api::quantile({5, 1, 4, 2, 3, 6, 7, 8, 9, 10}, 0.95) == 10);
  CHECK(*baton::api::quantile({5, 1, 4, 2, 3, 6, 7, 8, 9, 10}, 0.5) == 5);
}
