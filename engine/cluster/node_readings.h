// What an operator of a table of laptops watches per machine, read from /proc and /sys: CPU
// temperature (laptops throttle), memory, network bytes, open connections, and this process's
// own figures (the Prometheus process_* set). Each worker sends its readings to the coordinator
// in its heartbeat (NodeStatus.readings) and its Stats reply; the coordinator shows them in
// /metrics, /v1/cluster and `engine-ctl status`. A value the machine does not have (no sensor in
// a VM) is absent, never 0. Linux only; the roots are parameters so tests read a fake tree.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/messages.h"

namespace baton::registry {

// The reading names (also the suffix of their /metrics family baton_node_<name>).
inline constexpr const char* kReadingCpuTemperature = "cpu_temperature_celsius";
inline constexpr const char* kReadingMemoryTotal = "memory_total_bytes";
inline constexpr const char* kReadingMemoryAvailable = "memory_available_bytes";
inline constexpr const char* kReadingProcessResident = "process_resident_memory_bytes";
inline constexpr const char* kReadingNetworkReceive = "network_receive_bytes";
inline constexpr const char* kReadingNetworkTransmit = "network_transmit_bytes";
inline constexpr const char* kReadingOpenConnections = "open_connections";

// True for the names above (a worker's Stats reply mixes them with its pipeline counters).
bool is_node_reading(std::string_view name);

struct ReadingRoots {
  std::filesystem::path sys{"/sys"};
  std::filesystem::path proc{"/proc"};
};

// The hottest CPU sensor in degrees Celsius: hwmon chips of the CPU (coretemp, k10temp, zenpower,
// cpu_thermal, ...), else the thermal zones of the CPU (x86_pkg_temp, cpu-thermal, ...), else
// ACPI's zone (acpitz). nullopt when the machine exposes none.
std::optional<double> read_cpu_temperature(const std::filesystem::path& sys_root = "/sys");

struct NetworkBytes {
  uint64_t received = 0;
  uint64_t transmitted = 0;
};
// Bytes through every interface but loopback since boot (/proc/net/dev); nullopt if unreadable.
std::optional<NetworkBytes> read_network_bytes(const std::filesystem::path& proc_root = "/proc");

// This process's established TCP connections (its socket fds matched against /proc/self/net/tcp
// and tcp6); nullopt if unreadable.
std::optional<uint64_t> count_open_connections(const std::filesystem::path& proc_root = "/proc");

// This process, as Prometheus' client libraries report it (process_* families).
struct ProcessFigures {
  double cpu_seconds = 0;         // user + system
  double start_time_seconds = 0;  // since the Unix epoch
  uint64_t resident_bytes = 0;
  uint64_t virtual_bytes = 0;
  uint64_t open_fds = 0;
  uint64_t max_fds = 0;
};
// Throws baton::Error naming the file it could not read.
ProcessFigures read_process_figures(const std::filesystem::path& proc_root = "/proc");

// Every reading this machine has, by name (the constants above), sorted by name.
std::vector<net::StatEntry> read_node_readings(const ReadingRoots& roots = {});

}  // namespace baton::registry
