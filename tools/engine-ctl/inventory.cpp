// engine-ctl inventory-to-config: the topology table an operator of many machines keeps (one row
// per machine: id, host, memory, optional layers and port) turned into a cluster.yaml with a fixed
// node list. The table is TSV or CSV with a header row naming its columns, in any order:
//
//   # id     host        memory   layers
//   node-01  10.0.0.11   16GiB    0-10
//   node-02  10.0.0.12   8GiB     11-21
//
// memory becomes each node's `weight` (GiB), which splits the layers when no row gives any
// (`layers: auto`); with the model readable the result is checked as the coordinator would (layer
// coverage) and each node's share against its memory.
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "commands.h"
#include "engine/base/error.h"
#include "engine/cluster/cluster_config.h"
#include "engine/cluster/planner.h"
#include "engine/registry/join_client.h"
#include "gguf/gguf_file.h"

namespace baton::ctl {

namespace {

std::string trim_inventory_field(std::string s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

// Tab-separated if the header holds a tab, else comma-separated, else split on spaces.
std::vector<std::string> split_inventory_row(const std::string& line, char sep) {
  std::vector<std::string> out;
  if (sep == ' ') {
    std::istringstream in(line);
    for (std::string w; in >> w;) out.push_back(w);
    return out;
  }
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, sep)) out.push_back(trim_inventory_field(field));
  if (!line.empty() && line.back() == sep) out.emplace_back();
  return out;
}

// "16GiB", "16 GB", "16384M", "16" (GiB) -> bytes. Units are binary: a "16GB" laptop has 16 GiB.
uint64_t parse_inventory_memory(const std::string& text, const std::string& where) {
  double value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  std::string unit = trim_inventory_field(std::string(ptr, end));
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  static const std::map<std::string, double> kUnits = {{"", 1024.0 * 1024 * 1024},
                                                       {"b", 1},
                                                       {"k", 1024.0},
                                                       {"kb", 1024.0},
                                                       {"kib", 1024.0},
                                                       {"m", 1048576.0},
                                                       {"mb", 1048576.0},
                                                       {"mib", 1048576.0},
                                                       {"g", 1073741824.0},
                                                       {"gb", 1073741824.0},
                                                       {"gib", 1073741824.0},
                                                       {"t", 1099511627776.0},
                                                       {"tb", 1099511627776.0},
                                                       {"tib", 1099511627776.0}};
  const auto u = kUnits.find(unit);
  if (ec != std::errc() || ptr == begin || u == kUnits.end() || !(value > 0) || !std::isfinite(value))
    fail("{}: memory '{}' is not a size (e.g. 16GiB, 8192MiB, 16 = GiB)", where, text);
  return static_cast<uint64_t>(value * u->second);
}

// "0-10", "0..10", "[0, 10]" (inclusive) -> the range; "", "auto" -> nullopt.
std::optional<std::pair<int64_t, int64_t>> parse_inventory_layers(std::string text, const std::string& where) {
  std::erase_if(text, [](char c) { return c == '[' || c == ']' || c == ' '; });
  if (text.empty() || text == "auto") return std::nullopt;
  for (const char* sep : {"..", "-", ","}) {
    const auto at = text.find(sep);
    if (at == std::string::npos) continue;
    int64_t a = -1, b = -1;
    const std::string first = text.substr(0, at), last = text.substr(at + std::string_view(sep).size());
    auto r1 = std::from_chars(first.data(), first.data() + first.size(), a);
    auto r2 = std::from_chars(last.data(), last.data() + last.size(), b);
    if (r1.ec == std::errc() && r1.ptr == first.data() + first.size() && r2.ec == std::errc() &&
        r2.ptr == last.data() + last.size() && a >= 0 && b >= a)
      return std::make_pair(a, b);
    break;
  }
  fail("{}: layers '{}' is not an inclusive range FIRST-LAST (e.g. 0-10) or auto", where, text);
}

struct InventoryRow {
  std::string id, host;
  uint16_t port = 0;
  uint64_t memory = 0;
  std::optional<std::pair<int64_t, int64_t>> layers;
  int line = 0;
};

std::vector<InventoryRow> read_inventory(const std::string& path, uint16_t default_port) {
  std::ifstream in(path);
  if (!in) fail("cannot read inventory {}", path);
  std::vector<InventoryRow> rows;
  std::map<std::string, size_t> column;
  char sep = ' ';
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    line = trim_inventory_field(line);
    if (line.empty()) continue;
    const std::string where = fmt::format("{}:{}", path, line_no);
    if (column.empty()) {  // the header: the first line, a leading '#' allowed
      const auto start = line.find_first_not_of('#');
      line = start == std::string::npos ? "" : trim_inventory_field(line.substr(start));
      if (line.empty()) continue;
      sep = line.find('\t') != std::string::npos ? '\t' : line.find(',') != std::string::npos ? ',' : ' ';
      const auto names = split_inventory_row(line, sep);
      for (size_t i = 0; i < names.size(); ++i) {
        std::string name = names[i];
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
        if (name != "id" && name != "host" && name != "memory" && name != "layers" && name != "port")
          fail("{}: unknown column '{}' (the columns are id, host, memory, and optionally layers, port)", where,
               names[i]);
        if (!column.emplace(name, i).second) fail("{}: column '{}' appears twice", where, name);
      }
      for (const char* required : {"id", "host", "memory"})
        if (!column.contains(required))
          fail("{}: the header has no '{}' column (id, host, memory are required)", where, required);
      continue;
    }
    if (line.front() == '#') continue;
    const auto fields = split_inventory_row(line, sep);
    auto get = [&](const char* name) -> std::string {
      const auto c = column.find(name);
      return c == column.end() || c->second >= fields.size() ? "" : fields[c->second];
    };
    InventoryRow row;
    row.line = line_no;
    row.id = get("id");
    row.host = get("host");
    if (row.id.empty() || row.host.empty()) fail("{}: every row needs an id and a host", where);
    row.memory = parse_inventory_memory(get("memory"), where);
    row.layers = parse_inventory_layers(get("layers"), where);
    row.port = default_port;
    if (const std::string port = get("port"); !port.empty()) {
      unsigned value = 0;
      auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
      if (ec != std::errc() || ptr != port.data() + port.size() || value == 0 || value > 65535)
        fail("{}: port '{}' is not a port number", where, port);
      row.port = static_cast<uint16_t>(value);
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) fail("{}: no machines listed (a header row, then one row per machine)", path);
  return rows;
}

std::string yaml_string(const std::string& s) { return nlohmann::json(s).dump(); }  // JSON strings are YAML

}  // namespace

int run_inventory_to_config(const InventoryArgs& args) {
  const auto rows = read_inventory(args.inventory, args.port);
  const auto [master_host, master_port] = registry::parse_host_port(args.master, "--master");
  std::string yaml = fmt::format("# cluster.yaml generated by `engine-ctl inventory-to-config {}`\n",
                                 std::filesystem::path(args.inventory).filename().string());
  yaml += fmt::format("model: {}\ncluster:\n  master: {{ host: {}, port: {} }}\n", yaml_string(args.model),
                      yaml_string(master_host), master_port);
  yaml += args.insecure ? "  insecure: true\n" : fmt::format("  secret_file: {}\n", yaml_string(args.secret_file));
  yaml += "  nodes:\n";
  for (const auto& r : rows) {
    const std::string layers =
        r.layers ? fmt::format("[{}, {}]", r.layers->first, r.layers->second) : std::string("auto");
    yaml += fmt::format("    - {{ id: {}, host: {}, port: {}, layers: {}, weight: {:.3g} }}  # {}\n", yaml_string(r.id),
                        yaml_string(r.host), r.port, layers, static_cast<double>(r.memory) / (1ull << 30),
                        format_bytes(r.memory));
  }

  // The coordinator's own parser and planner judge the result, so what is written loads.
  const std::string out_dir = args.output.empty() ? "." : std::filesystem::absolute(args.output).parent_path().string();
  ClusterConfig config;
  try {
    config = parse_cluster_config(yaml, args.output.empty() ? "cluster.yaml" : args.output, out_dir);
  } catch (const std::exception& e) {
    fail("{}: the generated config would not load: {}", args.inventory, e.what());
  }
  std::shared_ptr<const gguf::GgufFile> file;
  try {
    file = gguf::GgufFile::open(config.model);
  } catch (const std::exception& e) {
    fmt::print(stderr, "note: model {} not readable here ({}): layer coverage and memory fit not checked\n",
               config.model, e.what());
  }
  if (file) {
    const auto fp = ModelFootprint::from_file(*file, args.n_ctx, args.slots);
    std::vector<StageAssignment> plan;
    try {
      plan = plan_layers(config, fp.n_layer);
    } catch (const std::exception& e) {
      fail("{}: {}", args.inventory, e.what());
    }
    for (size_t i = 0; i < plan.size(); ++i) {
      const uint64_t need = range_bytes(fp, {}, plan[i].layers);
      if (need > rows[i].memory)
        fmt::print(stderr, "warning: {}:{}: {} gets layers {}, which need {} (weights + KV + headroom); it has {}\n",
                   args.inventory, rows[i].line, plan[i].node_id, to_string(plan[i].layers), format_bytes(need),
                   format_bytes(rows[i].memory));
    }
  }

  if (args.output.empty()) {
    fmt::print("{}", yaml);
  } else {
    std::ofstream out(args.output);
    if (!(out << yaml)) fail("cannot write {}", args.output);
    fmt::print(stderr, "wrote {}: {} nodes\n", args.output, rows.size());
  }
  return 0;
}

}  // namespace baton::ctl
