// engine-ctl inventory-to-config as a process: the topology table an operator keeps (TSV or CSV:
// id, host, memory, optional layers and port) becomes a cluster.yaml the coordinator's parser
// accepts, with the table's layers or `auto` weighted by memory; a table that cannot load is
// refused naming the line or the layers; and a generated config serves a real 2-worker cluster.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/cluster/cluster_config.h"
#include "engine/cluster/planner.h"
#include "engine/model/model_config.h"
#include "fixtures.h"
#include "gguf/gguf_file.h"
#include "support/process.h"

namespace {

std::string ctl_path() {
  const std::string path = baton::test::binary_dir() + "/bin/engine-ctl";
  if (!std::filesystem::exists(path)) FAIL("engine-ctl is not built in " << baton::test::binary_dir() << "/bin");
  return path;
}

std::string write_inventory(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

int64_t stories_n_layer() {
  auto file = baton::gguf::GgufFile::open(baton::test::shared_path("models/stories260K.gguf"));
  return baton::ModelConfig::from_metadata(file->metadata()).n_layer;
}

}  // namespace

TEST_CASE("inventory-to-config turns a TSV with layers into a fixed cluster.yaml") {
  const std::string dir = baton::test::temp_dir();
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  const int64_t n = stories_n_layer();
  REQUIRE(n >= 2);
  const std::string inv = write_inventory(dir, "inventory.tsv",
                                          "# id\thost\tmemory\tlayers\tport\n"
                                          "node-01\t10.0.0.11\t16GiB\t0-0\t8010\n"
                                          "# a comment line\n"
                                          "node-02\t10.0.0.12\t8192 MiB\t1-" +
                                              std::to_string(n - 1) + "\t9000\n");
  const auto r = baton::test::run_shell(ctl_path() + " inventory-to-config " + inv + " --model " + model +
                                        " --master 10.0.0.10:8021 -o " + dir + "/cluster.yaml 2>&1");
  INFO(r.out);
  REQUIRE(r.status == 0);
  const auto config = baton::parse_cluster_config_file(dir + "/cluster.yaml");
  CHECK(config.model == model);
  CHECK(config.master_host == "10.0.0.10");
  CHECK(config.master_port == 8021);
  CHECK(config.secret_file == dir + "/cluster.secret");
  REQUIRE(config.nodes.size() == 2);
  CHECK(config.nodes[0].id == "node-01");
  CHECK(config.nodes[0].host == "10.0.0.11");
  CHECK(config.nodes[0].port == 8010);
  CHECK(config.nodes[0].layers == baton::LayerSpan::from_inclusive(0, 0));
  CHECK(config.nodes[0].weight == Approx(16));
  CHECK(config.nodes[1].port == 9000);
  CHECK(config.nodes[1].layers == baton::LayerSpan::from_inclusive(1, n - 1));
  CHECK(config.nodes[1].weight == Approx(8));
  CHECK(baton::plan_layers(config, n).size() == 2);
}

TEST_CASE("inventory-to-config writes layers auto weighted by memory from a CSV without layers") {
  const std::string dir = baton::test::temp_dir();
  const std::string inv = write_inventory(dir, "laptops.csv",
                                          "id,host,memory\nlaptop-a,192.168.1.20,32GB\nlaptop-b,192.168.1.21,16\n"
                                          "laptop-c,192.168.1.22,16G\n");
  const auto r = baton::test::run_shell(ctl_path() + " inventory-to-config " + inv + " --model " +
                                        baton::test::shared_path("models/stories260K.gguf") + " --insecure");
  INFO(r.out);
  REQUIRE(r.status == 0);
  const auto config = baton::parse_cluster_config(r.out, "stdout");  // stdout carries only the YAML
  CHECK(config.insecure);
  REQUIRE(config.nodes.size() == 3);
  for (const auto& node : config.nodes) CHECK_FALSE(node.layers);
  CHECK(config.nodes[0].weight == Approx(32));
  CHECK(config.nodes[1].weight == Approx(16));
  CHECK(config.nodes[2].host == "192.168.1.22");
  CHECK(config.nodes[2].port == 8010);
}

TEST_CASE("inventory-to-config refuses a table that could not load, naming the line or the layers") {
  const std::string dir = baton::test::temp_dir();
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  const auto convert = [&](const std::string& name, const std::string& text) {
    return baton::test::run_shell(ctl_path() + " inventory-to-config " + write_inventory(dir, name, text) +
                                  " --model " + model + " --insecure 2>&1");
  };
  const auto memory = convert("memory.tsv", "id\thost\tmemory\nn1\th1\tlots\n");
  CHECK(memory.status == 1);
  CHECK_THAT(memory.out, Catch::Contains("memory.tsv:2: memory 'lots' is not a size"));
  const auto column = convert("column.tsv", "id\thost\tmem\n");
  CHECK(column.status == 1);
  CHECK_THAT(column.out, Catch::Contains("column.tsv:1: unknown column 'mem'"));
  const auto gap = convert("gap.tsv", "id\thost\tmemory\tlayers\nn1\th1\t8\t0-0\n");  // layers 1.. missing
  CHECK(gap.status == 1);
  CHECK_THAT(gap.out, Catch::Contains("gap.tsv") && Catch::Contains("assigned"));
  const auto twice = convert("twice.csv", "id,host,memory\nn1,h1,8\nn1,h2,8\n");
  CHECK(twice.status == 1);
  CHECK_THAT(twice.out, Catch::Contains("n1"));
}

TEST_CASE("a cluster.yaml generated from an inventory passes engine-ctl doctor and serves engine-run") {
  const std::string dir = baton::test::temp_dir();
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  const std::string bin = baton::test::binary_dir() + "/bin/";
  std::vector<std::unique_ptr<baton::test::Process>> workers;
  std::string table = "id,host,port,memory\n";
  for (int i = 1; i <= 2; ++i) {
    const std::string id = "inv-0" + std::to_string(i);
    workers.push_back(std::make_unique<baton::test::Process>(
        std::vector<std::string>{bin + "engine-worker", "--host", "127.0.0.1", "--port", "0", "--node-id", id,
                                 "--model", model, "--insecure"},
        baton::test::ProcessOptions{.stderr_path = dir + "/" + id + ".log"}));
    const auto line = workers.back()->wait_for_line("listening on 127.0.0.1:", std::chrono::seconds(30));
    REQUIRE(line);
    table += id + ",127.0.0.1," + line->substr(line->rfind(':') + 1) + ",1GiB\n";
  }
  const auto gen =
      baton::test::run_shell(ctl_path() + " inventory-to-config " + write_inventory(dir, "inv.csv", table) +
                             " --model " + model + " --insecure -o " + dir + "/cluster.yaml 2>&1");
  INFO(table << gen.out);
  REQUIRE(gen.status == 0);
  const auto doctor = baton::test::run_shell(ctl_path() + " doctor " + dir + "/cluster.yaml 2>&1");
  INFO(doctor.out);
  CHECK(doctor.status == 0);
  CHECK_THAT(doctor.out, Catch::Contains("all checks passed"));
  const auto run = baton::test::run_shell(bin + "engine-run --config " + dir +
                                          "/cluster.yaml -p 'Once upon a time' -n 8 --temp 0 2>&1");
  INFO(run.out);
  CHECK(run.status == 0);
  CHECK_THAT(run.out, Catch::Contains("Once upon a time") && Catch::Contains("generated: 8 tokens"));
}
