#include "engine/cluster/node_readings.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/base/error.h"
#include "engine/cluster/node_probe.h"

namespace baton::registry {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> read_first_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

// A sysfs temperature file: millidegrees Celsius; implausible values (a disconnected probe
// reads -40 or 127.5 on some boards) are skipped.
std::optional<double> read_millidegrees(const fs::path& path) {
  auto line = read_first_line(path);
  if (!line) return std::nullopt;
  try {
    size_t used = 0;
    const long long v = std::stoll(*line, &used);
    const double c = static_cast<double>(v) / 1000.0;
    if (used == 0 || c <= -30 || c >= 125) return std::nullopt;
    return c;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<fs::path> sorted_entries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

// Rank of a sensor's chip or zone name: 2 = the CPU package/cores, 1 = ACPI's board zone, 0 = other.
int cpu_sensor_rank(const std::string& name) {
  static const std::array<const char*, 8> kCpu = {"coretemp",    "k10temp",      "zenpower",    "cpu_thermal",
                                                  "cpu-thermal", "x86_pkg_temp", "soc_thermal", "cpu"};
  for (const char* c : kCpu)
    if (name == c || name.starts_with(std::string(c) + "_") || name.starts_with(std::string(c) + "-")) return 2;
  if (name == "acpitz") return 1;
  return 0;
}

}  // namespace

bool is_node_reading(std::string_view name) {
  for (const char* n : {kReadingCpuTemperature, kReadingMemoryTotal, kReadingMemoryAvailable, kReadingProcessResident,
                        kReadingNetworkReceive, kReadingNetworkTransmit, kReadingOpenConnections})
    if (name == n) return true;
  return false;
}

std::optional<double> read_cpu_temperature(const fs::path& sys_root) {
  int best_rank = 0;  // 0: nothing found yet
  double best = 0;
  auto offer = [&](int rank, double celsius) {
    if (rank == 0) return;
    if (rank > best_rank) {
      best_rank = rank;
      best = celsius;
    } else if (rank == best_rank) {
      best = std::max(best, celsius);
    }
  };
  for (const auto& chip : sorted_entries(sys_root / "class" / "hwmon")) {
    auto name = read_first_line(chip / "name");
    if (!name) continue;
    const int rank = cpu_sensor_rank(*name);
    if (rank == 0) continue;
    for (const auto& f : sorted_entries(chip)) {
      const std::string file = f.filename().string();
      if (file.starts_with("temp") && file.ends_with("_input"))
        if (auto c = read_millidegrees(f)) offer(rank, *c);
    }
  }
  for (const auto& zone : sorted_entries(sys_root / "class" / "thermal")) {
    if (!zone.filename().string().starts_with("thermal_zone")) continue;
    auto type = read_first_line(zone / "type");
    if (!type) continue;
    if (auto c = read_millidegrees(zone / "temp")) offer(cpu_sensor_rank(*type), *c);
  }
  if (best_rank == 0) return std::nullopt;
  return best;
}

std::optional<NetworkBytes> read_network_bytes(const fs::path& proc_root) {
  std::ifstream in(proc_root / "net" / "dev");
  if (!in) return std::nullopt;
  NetworkBytes total;
  std::string line;
  bool any = false;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;  // the two header lines
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name == "lo") continue;
    // Receive: bytes packets errs drop fifo frame compressed multicast; then transmit: bytes ...
    std::istringstream fields(line.substr(colon + 1));
    std::array<uint64_t, 9> v{};
    for (auto& x : v)
      if (!(fields >> x)) break;
    total.received += v[0];
    total.transmitted += v[8];
    any = true;
  }
  if (!any) return NetworkBytes{};
  return total;
}

std::optional<uint64_t> count_open_connections(const fs::path& proc_root) {
  std::set<std::string> inodes;
  std::error_code ec;
  for (fs::directory_iterator it(proc_root / "self" / "fd", ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code link_ec;
    const std::string target = fs::read_symlink(it->path(), link_ec).string();
    if (!link_ec && target.starts_with("socket:[") && target.ends_with("]"))
      inodes.insert(target.substr(8, target.size() - 9));
  }
  if (ec) return std::nullopt;
  uint64_t established = 0;
  bool read_any = false;
  for (const char* table : {"tcp", "tcp6"}) {
    std::ifstream in(proc_root / "self" / "net" / table);
    if (!in) continue;
    read_any = true;
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
      std::istringstream f(line);
      std::string sl, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      if (!(f >> sl >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode)) continue;
      if (state == "01" && inodes.count(inode)) ++established;
    }
  }
  if (!read_any) return std::nullopt;
  return established;
}

ProcessFigures read_process_figures(const fs::path& proc_root) {
  ProcessFigures p;
  const fs::path stat_path = proc_root / "self" / "stat";
  auto stat = read_first_line(stat_path);
  if (!stat) fail("cannot read {}", stat_path.string());
  // The command name (field 2) may hold spaces and parentheses: the fields after it follow the last ')'.
  const size_t close = stat->rfind(')');
  if (close == std::string::npos) fail("{}: no ')' after the command name", stat_path.string());
  std::istringstream f(stat->substr(close + 2));
  std::vector<std::string> fields;  // fields[0] is field 3 (state)
  for (std::string x; f >> x;) fields.push_back(x);
  if (fields.size() < 22) fail("{}: {} fields, expected at least 24", stat_path.string(), fields.size() + 2);
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  auto field = [&](int n) { return std::stod(fields[static_cast<size_t>(n - 3)]); };
  p.cpu_seconds = (field(14) + field(15)) / ticks;
  p.virtual_bytes = static_cast<uint64_t>(field(23));
  p.resident_bytes = static_cast<uint64_t>(field(24) * page);
  // Start time: boot time (/proc/stat btime) + field 22 (ticks after boot).
  std::ifstream sys_stat(proc_root / "stat");
  for (std::string line; std::getline(sys_stat, line);)
    if (line.starts_with("btime ")) p.start_time_seconds = std::stod(line.substr(6)) + field(22) / ticks;
  std::error_code ec;
  for (fs::directory_iterator it(proc_root / "self" / "fd", ec), end; !ec && it != end; it.increment(ec)) ++p.open_fds;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) p.max_fds = limit.rlim_cur;
  return p;
}

std::vector<net::StatEntry> read_node_readings(const ReadingRoots& roots) {
  std::vector<net::StatEntry> out;
  if (auto t = read_cpu_temperature(roots.sys)) out.push_back({kReadingCpuTemperature, *t});
  try {
    const auto mem = read_meminfo((roots.proc / "meminfo").string());
    out.push_back({kReadingMemoryTotal, static_cast<double>(mem.total)});
    out.push_back({kReadingMemoryAvailable, static_cast<double>(mem.available)});
  } catch (const std::exception&) {
  }
  try {
    out.push_back({kReadingProcessResident, static_cast<double>(read_process_figures(roots.proc).resident_bytes)});
  } catch (const std::exception&) {
  }
  if (auto n = read_network_bytes(roots.proc)) {
    out.push_back({kReadingNetworkReceive, static_cast<double>(n->received)});
    out.push_back({kReadingNetworkTransmit, static_cast<double>(n->transmitted)});
  }
  if (auto c = count_open_connections(roots.proc)) out.push_back({kReadingOpenConnections, static_cast<double>(*c)});
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

}  // namespace baton::registry
