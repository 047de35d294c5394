#include <fmt/core.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "engine/registry/join_client.h"
#include "engine/cluster/planner.h"

namespace baton::ctl {

namespace {

std::string str(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "-";
}

// The machine columns from a node's "readings" ("-" for what it does not report).
std::string reading_cells(const nlohmann::json& n) {
  const nlohmann::json r =
      n.contains("readings") && n["readings"].is_object() ? n["readings"] : nlohmann::json::object();
  auto has = [&](const char* k) { return r.contains(k) && r[k].is_number(); };
  auto bytes = [&](const char* k) {
    return has(k) ? format_bytes(static_cast<uint64_t>(r[k].get<double>())) : std::string("-");
  };
  const std::string temp =
      has("cpu_temperature_celsius") ? fmt::format("{:.0f} °C", r["cpu_temperature_celsius"].get<double>()) : "-";
  const std::string net = has("network_receive_bytes") || has("network_transmit_bytes")
                              ? fmt::format("{} / {}", bytes("network_receive_bytes"), bytes("network_transmit_bytes"))
                              : "-";
  const std::string conns = has("open_connections") ? fmt::format("{:.0f}", r["open_connections"].get<double>()) : "-";
  return fmt::format("{} | {} | {} | {}", temp, bytes("memory_available_bytes"), net, conns);
}

// "http://127.0.0.1:8021/" (what the coordinator prints) -> "127.0.0.1:8021".
std::string coordinator_address(std::string text) {
  if (text.rfind("http://", 0) == 0) text = text.substr(7);
  while (!text.empty() && text.back() == '/') text.pop_back();
  return text;
}

}  // namespace

int run_status(const StatusArgs& args) {
  const std::string address = coordinator_address(args.coordinator);
  if (args.coordinator.rfind("https://", 0) == 0) {
    fmt::print(stderr, "error: --coordinator '{}': HTTPS is not supported, give http://HOST:PORT or HOST:PORT\n",
               args.coordinator);
    return 1;
  }
  const auto [host, port] = registry::parse_host_port(address, "--coordinator");
  httplib::Client client(host, port);
  const auto t = std::chrono::milliseconds(static_cast<int64_t>(args.timeout_s * 1000));
  client.set_connection_timeout(t);
  client.set_read_timeout(t);
  httplib::Headers headers;
  if (!args.api_key.empty()) headers.emplace("Authorization", "Bearer " + args.api_key);
  auto res = client.Get("/v1/cluster", headers);
  if (!res) {
    const bool refused = res.error() == httplib::Error::Connection;
    fmt::print(
        stderr, "error: cannot reach the coordinator at {}: {}{}\n", address, httplib::to_string(res.error()),
        refused ? " error (nothing listens there, or a firewall refuses it; is engine-coordinator running?)" : "");
    return 1;
  }
  if (res->status == 503) {  // still connecting or loading: say how far it got
    try {
      const auto doc = nlohmann::json::parse(res->body);
      if (doc.value("status", "") == "loading") {
        const auto& p = doc["progress"];
        fmt::print("cluster {}: LOADING ({}), {}/{} nodes connected, {}/{} ready: {}\n", address, p.value("phase", "?"),
                   p.value("nodes_connected", 0), p.value("nodes_total", 0), p.value("nodes_ready", 0),
                   p.value("nodes_total", 0),
                   doc.contains("error") ? doc["error"].value("message", "") : std::string());
        return 1;
      }
    } catch (const std::exception&) {
    }
  }
  if (res->status != 200) {
    fmt::print(stderr, "error: GET http://{}/v1/cluster answered {}: {}\n", address, res->status, res->body);
    return 1;
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(res->body);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: GET http://{}/v1/cluster: not JSON: {}\n", address, e.what());
    return 1;
  }
  const bool ready = doc.value("ready", false);
  fmt::print("cluster {}: {}, layers {}covered, {} layers\n", address, ready ? "ready" : "NOT READY",
             doc.value("layers_covered", false) ? "" : "not ", doc.value("n_layer", 0));
  if (doc.contains("detail") && doc["detail"].is_string() && !doc["detail"].get<std::string>().empty())
    fmt::print("detail: {}\n", doc["detail"].get<std::string>());
  fmt::print(
      "| id | address | status | layers | memory | load | last heartbeat | role | cpu temp | mem available | net rx / "
      "tx | connections |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& n : doc.value("nodes", nlohmann::json::array())) {
    std::string layers = "-";
    if (n.contains("layers") && n["layers"].is_array() && n["layers"].size() == 2)
      layers = fmt::format("{}-{}", n["layers"][0].get<int64_t>(), n["layers"][1].get<int64_t>());
    // null (unknown, e.g. a static cluster's worker) counts as 0: shown as "-".
    auto bytes = [&](const char* key) {
      return n.contains(key) && n[key].is_number_unsigned() ? n[key].get<uint64_t>() : uint64_t{0};
    };
    const auto total = bytes("memory_total_bytes"), used = bytes("memory_used_bytes");
    const std::string memory = total ? fmt::format("{} / {}", format_bytes(used), format_bytes(total)) : "-";
    std::string hb = "-";
    if (n.contains("last_heartbeat_seconds") && n["last_heartbeat_seconds"].is_number())
      hb = fmt::format("{:.1f} s ago", n["last_heartbeat_seconds"].get<double>());
    fmt::print("| {} | {} | {} | {} | {} | {:.0f}% | {} | {} | {} |\n", str(n, "id"), str(n, "address"),
               str(n, "status"), layers, memory, 100 * n.value("load", 0.0), hb, str(n, "role"), reading_cells(n));
  }
  return ready ? 0 : 1;
}

}  // namespace baton::ctl
