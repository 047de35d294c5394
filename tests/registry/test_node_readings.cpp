// The machine readings a worker reports (engine/cluster/node_readings.h), read from fake /sys and
// /proc trees (this VM has no temperature sensor), and their trip through the wire's NodeStatus
// and the registry's JSON record.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include "engine/cluster/node_readings.h"
#include "engine/registry/node_record_json.h"
#include "fixtures.h"
#include "net/codec.h"

namespace {

namespace fs = std::filesystem;

void write_reading_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

fs::path fresh_reading_root(const std::string& name) {
  const fs::path root = fs::path(baton::test::temp_dir()) / name;
  fs::remove_all(root);
  fs::create_directories(root);
  return root;
}

}  // namespace

TEST_CASE("cpu temperature comes from the CPU hwmon chip, the hottest of its sensors", "[registry][readings]") {
  const auto sys = fresh_reading_root("sys-hwmon");
  write_reading_file(sys / "class/hwmon/hwmon0/name", "nvme\n");
  write_reading_file(sys / "class/hwmon/hwmon0/temp1_input", "80000\n");  // a disk: not the CPU
  write_reading_file(sys / "class/hwmon/hwmon1/name", "coretemp\n");
  write_reading_file(sys / "class/hwmon/hwmon1/temp1_input", "45000\n");
  write_reading_file(sys / "class/hwmon/hwmon1/temp2_input", "52500\n");
  write_reading_file(sys / "class/hwmon/hwmon1/temp2_label", "Core 0\n");
  write_reading_file(sys / "class/thermal/thermal_zone0/type", "acpitz\n");  // lower rank than the CPU chip
  write_reading_file(sys / "class/thermal/thermal_zone0/temp", "70000\n");
  auto t = baton::registry::read_cpu_temperature(sys);
  REQUIRE(t);
  CHECK(*t == Approx(52.5));
}

TEST_CASE("cpu temperature falls back to the thermal zones, then ACPI, and is unknown without sensors",
          "[registry][readings]") {
  const auto zones = fresh_reading_root("sys-zones");
  write_reading_file(zones / "class/thermal/thermal_zone0/type", "acpitz\n");
  write_reading_file(zones / "class/thermal/thermal_zone0/temp", "40000\n");
  write_reading_file(zones / "class/thermal/thermal_zone1/type", "x86_pkg_temp\n");
  write_reading_file(zones / "class/thermal/thermal_zone1/temp", "61000\n");
  write_reading_file(zones / "class/thermal/thermal_zone2/type", "iwlwifi_1\n");
  write_reading_file(zones / "class/thermal/thermal_zone2/temp", "90000\n");
  auto t = baton::registry::read_cpu_temperature(zones);
  REQUIRE(t);
  CHECK(*t == Approx(61.0));

  const auto acpi = fresh_reading_root("sys-acpi");
  write_reading_file(acpi / "class/thermal/thermal_zone0/type", "acpitz\n");
  write_reading_file(acpi / "class/thermal/thermal_zone0/temp", "48000\n");
  t = baton::registry::read_cpu_temperature(acpi);
  REQUIRE(t);
  CHECK(*t == Approx(48.0));

  const auto broken = fresh_reading_root("sys-broken");
  write_reading_file(broken / "class/hwmon/hwmon0/name", "k10temp\n");
  write_reading_file(broken / "class/hwmon/hwmon0/temp1_input", "-273000\n");  // a disconnected probe
  write_reading_file(broken / "class/hwmon/hwmon0/temp2_input", "garbage\n");
  CHECK_FALSE(baton::registry::read_cpu_temperature(broken));
  CHECK_FALSE(baton::registry::read_cpu_temperature(fresh_reading_root("sys-empty")));
}

TEST_CASE("network bytes sum every interface but loopback", "[registry][readings]") {
  const auto proc = fresh_reading_root("proc-net");
  write_reading_file(proc / "net/dev",
                     "Inter-|   Receive                                                |  Transmit\n"
                     " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop "
                     "fifo colls carrier compressed\n"
                     "    lo: 5000 10 0 0 0 0 0 0 5000 10 0 0 0 0 0 0\n"
                     "  eth0: 1000 5 0 0 0 0 0 0 300 3 0 0 0 0 0 0\n"
                     "wlan0: 20 1 0 0 0 0 0 0 7 1 0 0 0 0 0 0\n");
  auto n = baton::registry::read_network_bytes(proc);
  REQUIRE(n);
  CHECK(n->received == 1020);
  CHECK(n->transmitted == 307);
  CHECK_FALSE(baton::registry::read_network_bytes(fresh_reading_root("proc-none")));
}

TEST_CASE("this machine's readings: memory, process, network and connections, no fake temperature",
          "[registry][readings]") {
  baton::registry::ReadingRoots roots;
  roots.sys = fresh_reading_root("sys-none");  // no sensors: the temperature is absent, not 0
  const auto readings = baton::registry::read_node_readings(roots);
  std::map<std::string, double> by_name;
  for (const auto& r : readings) by_name[r.name] = r.value;
  CHECK(by_name.count("cpu_temperature_celsius") == 0);
  CHECK(by_name.at("memory_total_bytes") > 0);
  CHECK(by_name.at("memory_available_bytes") > 0);
  CHECK(by_name.at("process_resident_memory_bytes") > 0);
  CHECK(by_name.count("network_receive_bytes") == 1);
  CHECK(by_name.count("open_connections") == 1);
  const auto p = baton::registry::read_process_figures();
  CHECK(p.open_fds > 0);
  CHECK(p.max_fds >= p.open_fds);
  CHECK(p.start_time_seconds > 1.6e9);
}

TEST_CASE("readings travel in the heartbeat's NodeStatus and the registry's JSON record", "[registry][readings]") {
  baton::net::Heartbeat hb;
  hb.status.node_id = "w1";
  hb.status.host = "127.0.0.1";
  hb.status.port = 8010;
  hb.status.readings = {{"cpu_temperature_celsius", 61.5}, {"open_connections", 3}};
  const auto frame = baton::net::encode_frame(hb);
  auto decoded = baton::net::decode_frame(frame, {});
  REQUIRE(decoded.ok());
  const auto* back = std::get_if<baton::net::Heartbeat>(&decoded->message);
  REQUIRE(back);
  CHECK(*back == hb);

  // A heartbeat without readings (what an older worker sends) decodes to none.
  hb.status.readings.clear();
  auto plain = baton::net::decode_frame(baton::net::encode_frame(hb), {});
  REQUIRE(plain.ok());
  CHECK(std::get<baton::net::Heartbeat>(plain->message).status.readings.empty());

  baton::registry::NodeRecord record = back->status;
  const auto text = baton::registry::node_record_to_text(record);
  CHECK(text.find("\"readings\"") != std::string::npos);
  CHECK(baton::registry::node_record_from_text(text, "test") == record);
  // Without readings the record is the one older coordinators read.
  record.readings.clear();
  CHECK(baton::registry::node_record_to_text(record).find("readings") == std::string::npos);
  CHECK_THROWS_WITH(baton::registry::node_record_from_text(
                        R"({"node_id":"w","host":"h","port":1,"memory_total":0,"memory_free":0,"threads":1,"isa":"",)"
                        R"("load":0,"layers":[],"model_identity":"","speed":0,"readings":{"t":"hot"}})",
                        "test"),
                    Catch::Contains("readings.t"));
}
