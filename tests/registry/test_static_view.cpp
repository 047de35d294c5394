// GET /v1/cluster of a static cluster (a fixed node list, plain engine-worker processes that never
// register): what the coordinator cannot know is reported as unknown (issue 29, defect 5).
#include <catch2/catch.hpp>
#include <fmt/core.h>
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "engine/api/http_server.h"
#include "engine/api/served_model.h"
#include "engine/cluster/cluster_config.h"
#include "fixtures.h"
#include "pipeline/worker_process.h"
#include "registry/registry_helpers.h"

TEST_CASE("static cluster view: workers without heartbeats report unknown heartbeat and memory, not 0", "[registry]") {
  const std::string model = baton::test::shared_path(baton::test::kStoriesModel);
  baton::test::WorkerProcess a("static-a", model, {"--insecure"});
  baton::test::WorkerProcess b("static-b", model, {"--insecure"});
  const auto config =
      baton::parse_cluster_config(fmt::format("model: {}\ncluster:\n  insecure: true\n  nodes:\n"
                                              "    - {{ id: static-a, host: 127.0.0.1, port: {}, layers: [0, 2] }}\n"
                                              "    - {{ id: static-b, host: 127.0.0.1, port: {}, layers: [3, 4] }}\n",
                                              model, a.port(), b.port()),
                                  "static.yaml", "/");
  baton::api::ServeOptions so;
  so.threads = 1;
  so.n_ctx = 64;
  auto served = baton::api::ServedModel::open_cluster(config, so);
  baton::api::ServerOptions ho;
  ho.port = 0;
  baton::api::HttpServer server(*served, ho);
  server.start();
  httplib::Client client("127.0.0.1", server.port());
  auto res = client.Get("/v1/cluster");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  const auto doc = nlohmann::json::parse(res->body);
  INFO(res->body);
  REQUIRE(doc["nodes"].size() == 3);
  CHECK(doc["nodes"][0]["id"] == "coordinator");
  CHECK(doc["nodes"][0]["memory_total_bytes"].is_number());
  for (size_t i = 1; i < 3; ++i) {
    const auto& n = doc["nodes"][i];
    CHECK(n["status"] == "online");
    CHECK(n["last_heartbeat_seconds"].is_null());
    // Unknown (null) until the worker's Stats reply brings its machine's readings; never 0.
    CHECK((n["memory_total_bytes"].is_null() || n["memory_total_bytes"].get<uint64_t>() > 0));
  }
}
