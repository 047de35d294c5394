// The cluster tools as processes: engine-run --config prints the same JSON as engine-run -m,
// engine-bench --config prints the per-stage table, engine-coordinator --config loads the
// cluster and stops cleanly on SIGTERM.
#include <catch2/catch.hpp>
#include <fmt/core.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>

#include "support/ports.h"
#include "cluster_helpers.h"
#include "support/process.h"

namespace {

using baton::test::cluster_yaml;
using baton::test::spawn_workers;
// A tool run with stdout in memory and stderr in a file; killed and reaped by the destructor.
class Tool {
 public:
  Tool(const std::string& name, std::vector<std::string> args) {
    static int n = 0;
    baton::test::ProcessOptions po;
    po.stderr_path = baton::test::temp_dir() + "/" + name + "-" + std::to_string(n++) + ".err";
    args.insert(args.begin(), baton::test::binary_dir() + "/bin/" + name);
    process_ = std::make_unique<baton::test::Process>(std::move(args), po);
  }
  // Exit status, or -1 if it did not end within `limit`.
  int wait(std::chrono::milliseconds limit) { return process_->wait(limit); }
  bool wait_for_output(const std::string& text, std::chrono::milliseconds limit) {
    return process_->wait_for_output(text, limit);
  }
  void signal(int sig) { process_->signal(sig); }
  std::string out() const { return process_->output(); }
  std::string err() const { return process_->error_output(); }

 private:
  std::unique_ptr<baton::test::Process> process_;
};

std::string write_yaml(const std::string& text) {
  static int n = 0;
  const std::string path = baton::test::temp_dir() + "/tools-cluster-" + std::to_string(n++) + ".yaml";
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("engine-run --config prints the same JSON as one process", "[pipeline]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  auto w = spawn_workers(model, 2);
  const std::string yaml = write_yaml(cluster_yaml(model, {{w[0].get(), 0, 2}, {w[1].get(), 3, 4}}, "insecure: true"));
  // Sampled (default temperature) with a fixed seed: equal logits give equal draws.
  const std::vector<std::string> common = {"-p", "Once upon a time", "-n", "12", "--json", "-t", "1", "--seed", "7"};
  auto args_local = common, args_cluster = common;
  args_local.insert(args_local.end(), {"-m", model});
  args_cluster.insert(args_cluster.end(), {"--config", yaml});
  Tool local("engine-run", args_local);
  REQUIRE(local.wait(std::chrono::seconds(30)) == 0);
  Tool remote("engine-run", args_cluster);
  const int rc = remote.wait(std::chrono::seconds(30));
  INFO(remote.err());
  REQUIRE(rc == 0);
  auto a = nlohmann::json::parse(local.out());
  auto b = nlohmann::json::parse(remote.out());
  a.erase("timings");
  b.erase("timings");
  CHECK(a["steps"].size() == 12);
  CHECK(a == b);  // tokens, text, logprobs and top logprobs: bitwise (JSON prints doubles exactly)
}

TEST_CASE("engine-bench --config prints the measured per-stage and per-hop table", "[pipeline]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  auto w = spawn_workers(model, 2);
  const std::string yaml = write_yaml(
      cluster_yaml(model, {{w[0].get(), 0, 1}, {w[1].get(), 2, 4}}, "insecure: true", 5, 20, "activations: f16"));
  Tool bench("engine-bench", {"--config", yaml, "-p", "16", "-n", "8", "-r", "2", "-t", "1", "-d", "0,20"});
  const int rc = bench.wait(std::chrono::seconds(60));
  const std::string out = bench.out();
  INFO(out << bench.err());
  REQUIRE(rc == 0);
  for (const char* test : {"pp16", "tg8"}) {
    CHECK(out.find(fmt::format("| {} |", test)) != std::string::npos);
    CHECK(out.find(fmt::format("# {}: stage node-01 (127.0.0.1:{}, layers 0-1): compute ", test, w[0]->port())) !=
          std::string::npos);
    CHECK(out.find(fmt::format("# {}: stage node-02 (127.0.0.1:{}, layers 2-4): compute ", test, w[1]->port())) !=
          std::string::npos);
    CHECK(out.find(fmt::format("# {}: network, all 3 hops: ", test)) != std::string::npos);
  }
  CHECK(out.find(fmt::format("# tg8 @ d20: stage node-02 (127.0.0.1:{}, layers 2-4): compute ", w[1]->port())) !=
        std::string::npos);
  // stories260K: n_embd 64, f16 = 128 bytes per token on the hops that carry every token.
  CHECK(out.find("# tg8: hop coordinator -> node-01: 128 bytes/token (f16)") != std::string::npos);
  CHECK(out.find("# tg8: hop node-01 -> node-02: 128 bytes/token (f16)") != std::string::npos);
  CHECK(out.find("# tg8: hop node-02 -> coordinator: 128 bytes/token (f16)") != std::string::npos);
  CHECK(out.find("# pp16: hop node-02 -> coordinator: 8 bytes/token (f16)") != std::string::npos);  // 1 row of 16
  // ... and each hop's own network time, with its error bound.
  CHECK(out.find("# tg8: hop coordinator -> node-01: 128 bytes/token (f16), network ") != std::string::npos);
  CHECK(out.find("# tg8: hop node-01 -> node-02: 128 bytes/token (f16), network ") != std::string::npos);
  CHECK(out.find("# tg8: hop node-02 -> coordinator: 128 bytes/token (f16), network ") != std::string::npos);
  CHECK(out.find("not measured") == std::string::npos);
}

TEST_CASE("engine-coordinator --config loads the cluster and stops cleanly on SIGTERM", "[pipeline]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  auto w = spawn_workers(model, 2);
  std::string yaml = cluster_yaml(model, {{w[0].get(), 0, 2}, {w[1].get(), 3, 4}}, "insecure: true");
  yaml.replace(yaml.find("cluster:\n"), 9,
               fmt::format("cluster:\n  master: {{ host: 127.0.0.1, port: {} }}\n", baton::test::free_loopback_port()));
  Tool coordinator("engine-coordinator", {"--config", write_yaml(yaml)});
  // The plan table once the load has committed.
  const bool planned = coordinator.wait_for_output(fmt::format("| node-02 | 127.0.0.1:{} | 3-4 |", w[1]->port()),
                                                   std::chrono::seconds(20));
  INFO(coordinator.out() << coordinator.err());
  REQUIRE(planned);
  CHECK(baton::test::WorkerProcess::eventually_contains(*w[0], "committed"));
  coordinator.signal(SIGTERM);
  CHECK(coordinator.wait(std::chrono::seconds(10)) == 0);
  // The workers saw the coordinator go and released the load.
  CHECK(baton::test::WorkerProcess::eventually_contains(*w[0], "releasing load"));
  CHECK(baton::test::WorkerProcess::eventually_contains(*w[1], "releasing load"));
}

TEST_CASE("engine-bench -d runs every test after a context of that depth, named as llama-bench names it",
          "[pipeline]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  Tool bench("engine-bench", {"-m", model, "-p", "16", "-n", "4", "-r", "2", "-t", "1", "-d", "0,300", "-o", "json"});
  REQUIRE(bench.wait(std::chrono::seconds(60)) == 0);
  INFO(bench.out() << bench.err());
  const auto results = nlohmann::json::parse(bench.out());
  std::vector<std::pair<std::string, int>> seen;
  for (const auto& r : results) {
    seen.emplace_back(r["test"].get<std::string>(), r["n_depth"].get<int>());
    CHECK(r["avg_ts"].get<double>() > 0);
  }
  const std::vector<std::pair<std::string, int>> expected = {
      {"pp16", 0}, {"tg4", 0}, {"pp16 @ d300", 300}, {"tg4 @ d300", 300}};
  CHECK(seen == expected);
  // The context is real: 300 positions of attention (stories260K's context is 512) cost time.
  CHECK(results[3]["avg_ts"].get<double>() < results[1]["avg_ts"].get<double>());
}

TEST_CASE("engine-run --config --json keeps stdout for the JSON: the secret-file warning goes to stderr",
          "[pipeline]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  const std::string secret = baton::test::temp_dir() + "/tools-readable.secret";
  std::ofstream(secret) << "a shared secret of the cluster\n";
  ::chmod(secret.c_str(), 0644);  // group/others may read it: the tools warn
  auto w = spawn_workers(model, 2, secret);
  const std::string yaml =
      write_yaml(cluster_yaml(model, {{w[0].get(), 0, 2}, {w[1].get(), 3, 4}}, "secret_file: " + secret));
  Tool run("engine-run", {"--config", yaml, "-p", "Once upon a time", "-n", "4", "--json", "-t", "1"});
  const int rc = run.wait(std::chrono::seconds(30));
  INFO(run.err());
  REQUIRE(rc == 0);
  CHECK(run.err().find("accessible by group/others") != std::string::npos);
  CHECK_NOTHROW(nlohmann::json::parse(run.out()));  // nothing but the JSON
}
