#include "engine/api/operator_metrics.h"

#include <spdlog/spdlog.h>

#include "engine/cluster/node_readings.h"
#include "net/messages.h"

namespace baton::api {

void write_build_info(MetricsWriter& w) {
  w.family("baton_build_info", "gauge", "Always 1: the release and wire protocol version of this coordinator.");
  w.sample("baton_build_info", 1, {{"version", build_version()}, {"protocol", std::to_string(net::kProtocolVersion)}});
}

void write_process_metrics(MetricsWriter& w) {
  registry::ProcessFigures p;
  try {
    p = registry::read_process_figures();
  } catch (const std::exception& e) {
    spdlog::debug("/metrics: no process figures: {}", e.what());
    return;
  }
  auto one = [&](const char* name, const char* type, const char* help, double v) {
    w.family(name, type, help);
    w.sample(name, v);
  };
  one("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", p.cpu_seconds);
  one("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
      static_cast<double>(p.resident_bytes));
  one("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", static_cast<double>(p.virtual_bytes));
  one("process_open_fds", "gauge", "Number of open file descriptors.", static_cast<double>(p.open_fds));
  one("process_max_fds", "gauge", "Maximum number of open file descriptors.", static_cast<double>(p.max_fds));
  one("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
      p.start_time_seconds);
}

namespace {

struct ReadingFamily {
  const char* reading;
  const char* metric;
  const char* type;
  const char* help;
};

constexpr ReadingFamily kReadingFamilies[] = {
    {registry::kReadingCpuTemperature, "baton_node_cpu_temperature_celsius", "gauge",
     "Hottest CPU sensor of the node's machine (absent where it has none)."},
    {registry::kReadingMemoryTotal, "baton_node_memory_total_bytes", "gauge", "The node's machine memory (MemTotal)."},
    {registry::kReadingMemoryAvailable, "baton_node_memory_available_bytes", "gauge",
     "Memory the node's machine can still allocate without swapping (MemAvailable)."},
    {registry::kReadingProcessResident, "baton_node_process_resident_memory_bytes", "gauge",
     "Resident memory of the node's worker process."},
    {registry::kReadingNetworkReceive, "baton_node_network_receive_bytes_total", "counter",
     "Bytes received by the node's machine on every interface but loopback."},
    {registry::kReadingNetworkTransmit, "baton_node_network_transmit_bytes_total", "counter",
     "Bytes sent by the node's machine on every interface but loopback."},
    {registry::kReadingOpenConnections, "baton_node_open_connections", "gauge",
     "Established TCP connections of the node's worker process."},
};

}  // namespace

void write_node_metrics(MetricsWriter& w, const ClusterViewSnapshot& snapshot) {
  w.family("baton_node_up", "gauge", "1 when the node is online (serving or ready to), 0 when loading or offline.");
  for (const auto& n : snapshot.nodes)
    w.sample("baton_node_up", n.status == "online" ? 1 : 0, {{"node", n.id}, {"role", n.role}});
  for (const auto& f : kReadingFamilies) {
    bool any = false;
    for (const auto& n : snapshot.nodes) any = any || n.readings.count(f.reading);
    if (!any) continue;
    w.family(f.metric, f.type, f.help);
    for (const auto& n : snapshot.nodes) {
      auto it = n.readings.find(f.reading);
      if (it != n.readings.end()) w.sample(f.metric, it->second, {{"node", n.id}});
    }
  }
}

}  // namespace baton::api
