#include <fmt/core.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "engine/registry/join_client.h"
#include "engine/registry/planner.h"

namespace baton::ctl {

namespace {

std::string str(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "-";
}

// The machine columns from a node's "readings" ("-" for what it does not report).
std::string reading_cells(const nlohmann::json& n) {
  const nlohmann::json r = n.contains("readings") && n["readings"].is_object() ? n["readings"] : nlohmann::json::object();
  auto has = [&](const char* k) { return r.contains(k) && r[k].is_number(); };
  auto bytes = [&](const char* k) {
    return has(k) ? registry::format_bytes(static_cast<uint64_t>(r[k].get<double>())) : std::string("-");
  };
  const std::string temp = has("cpu_temperature_celsius") ? fmt::format("{:.0f} °C", r["cpu_temperature_celsius"].get<double>()) : "-";
  const std::string net = has("network_receive_bytes") || has("network_transmit_bytes")
                              ? fmt::format("{} / {}", bytes("network_receive_bytes"), bytes("network_transmit_bytes"))
                              : "-";
  const std::string conns = has("open_connections") ? fmt::format("{:.0f}", r["open_connections"].get<double>()) : "-";
  return fmt::format("{} | {} | {} | {}", temp, bytes("memory_available_bytes"), net, conns);
}

}  // namespace

int run_status(const StatusArgs& args) {
  const auto [host, port] = registry::parse_host_port(args.coordinator, "--coordinator");
  httplib::Client client(host, port);
  const auto t = std::chrono::milliseconds(static_cast<int64_t>(args.timeout_s * 1000));
  client.set_connection_timeout(t);
  client.set_read_timeout(t);
  httplib::Headers headers;
  if (!args.api_key.empty()) headers.emplace("Authorization", "Bearer " + args.api_key);
  auto res = client.Get("/v1/cluster", headers);
  if (!res) {
    fmt::print(stderr, "error: cannot reach the coordinator at {}: {}\n", args.coordinator, httplib::to_string(res.error()));
    return 1;
  }
  if (res->status != 200) {
    fmt::print(stderr, "error: GET http://{}/v1/cluster answered {}: {}\n", args.coordinator, res->status, res->body);
    return 1;
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(res->body);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: GET http://{}/v1/cluster: not JSON: {}\n", args.coordinator, e.what());
    return 1;
  }
  const bool ready = doc.value("ready", false);
  fmt::print("cluster {}: {}, layers {}covered, {} layers\n", args.coordinator, ready ? "ready" : "NOT READY",
             doc.value("layers_covered", false) ? "" : "not ", doc.value("n_layer", 0));
  if (doc.contains("detail") && doc["detail"].is_string() && !doc["detail"].get<std::string>().empty())
    fmt::print("detail: {}\n", doc["detail"].get<std::string>());
  fmt::print("| id | address | status | layers | memory | load | last heartbeat | role | cpu temp | mem available | net rx / tx | connections |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& n : doc.value("nodes", nlohmann::json::array())) {
    std::string layers = "-";
    if (n.contains("layers") && n["layers"].is_array() && n["layers"].size() == 2)
      layers = fmt::format("{}-{}", n["layers"][0].get<int64_t>(), n["layers"][1].get<int64_t>());
    const auto total = n.value("memory_total_bytes", uint64_t{0}), used = n.value("memory_used_bytes", uint64_t{0});
    const std::string memory =
        total ? fmt::format("{} / {}", registry::format_bytes(used), registry::format_bytes(total)) : "-";
    std::string hb = "-";
    if (n.contains("last_heartbeat_seconds") && n["last_heartbeat_seconds"].is_number())
      hb = fmt::format("{:.1f} s ago", n["last_heartbeat_seconds"].get<double>());
    fmt::print("| {} | {} | {} | {} | {} | {:.0f}% | {} | {} | {} |\n", str(n, "id"), str(n, "address"), str(n, "status"),
               layers, memory, 100 * n.value("load", 0.0), hb, str(n, "role"), reading_cells(n));
  }
  return ready ? 0 : 1;
}

}  // namespace baton::ctl
