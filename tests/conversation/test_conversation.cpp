// engine-run -cnv as a process with its stdin a pipe: turns stream out, /reset forgets the
// history (the same question after it gets the same greedy answer as the first time), EOF
// exits 0; on a cluster (--config), SIGINT stops the reply being generated and the program
// goes on to answer the next turn.
#include <catch2/catch.hpp>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "pipeline/cluster_helpers.h"
#include "support/process.h"

namespace {

using namespace std::chrono_literals;

std::unique_ptr<baton::test::Process> start_chat(std::vector<std::string> args, const std::string& err_path) {
  args.insert(args.begin(), baton::test::binary_dir() + "/bin/engine-run");
  baton::test::ProcessOptions po;
  po.stderr_path = err_path;
  po.stdin_pipe = true;
  return std::make_unique<baton::test::Process>(std::move(args), po);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("engine-run -cnv: turns from stdin, /reset forgets the history, EOF exits", "[conversation]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  // Greedy: a turn's reply depends only on the conversation before it.
  auto run = [&](const std::string& input, const std::string& name) {
    const std::string err = baton::test::temp_dir() + "/cnv-" + name + ".err";
    auto chat = start_chat({"-m", model, "-cnv", "-n", "12", "--temp", "0", "-t", "1"}, err);
    chat->write_stdin(input);
    chat->close_stdin();
    const int rc = chat->wait(30s);
    INFO("stdout: " << chat->output() << "\nstderr: " << chat->error_output());
    CHECK(rc == 0);
    return std::make_pair(chat->output(), chat->error_output());
  };
  const auto [fresh, fresh_log] = run("Hello, who are you?\n", "fresh");
  const auto [reset, reset_log] = run("Tell me more.\n/reset\nHello, who are you?\n", "reset");
  const auto [kept, kept_log] = run("Tell me more.\nHello, who are you?\n", "kept");
  INFO("fresh: " << fresh << "\nreset: " << reset << "\nkept: " << kept);
  CHECK(fresh_log.find("chat template: chatml") != std::string::npos);  // stories260K has none: chatml, as llama.cpp
  CHECK(count(fresh_log, " tokens/s, prompt ") == 1);
  CHECK(count(reset_log, " tokens/s, prompt ") == 2);
  CHECK(reset_log.find("(conversation reset)") != std::string::npos);
  REQUIRE(fresh.size() > 1);
  // After /reset the question gets the answer of a fresh conversation; with the history kept
  // (a longer prompt) it does not.
  CHECK(reset.size() > fresh.size());
  CHECK(reset.ends_with(fresh));
  CHECK(!kept.ends_with(fresh));
}

TEST_CASE("engine-run -cnv --config: Ctrl-C stops the reply, not the program", "[conversation]") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  // A slow link (every frame waits 20 ms) keeps a long reply running for seconds.
  auto w = baton::test::spawn_workers(model, 2, "", {"--test-write-delay-ms", "20"});
  const std::string yaml = baton::test::temp_dir() + "/cnv-cluster.yaml";
  std::ofstream(yaml) << baton::test::cluster_yaml(model, {{w[0].get(), 0, 2}, {w[1].get(), 3, 4}}, "insecure: true");
  const std::string err = baton::test::temp_dir() + "/cnv-cluster.err";
  auto chat = start_chat({"--config", yaml, "-cnv", "-n", "200", "--temp", "0", "--ignore-eos", "-t", "1"}, err);
  chat->write_stdin("Tell me a long story.\n");
  REQUIRE(chat->wait_for_output(" ", 30s));  // the reply is streaming
  chat->signal(SIGINT);
  const bool stopped =
      baton::test::eventually_true([&] { return chat->error_output().find(", stopped]") != std::string::npos; }, 20s);
  INFO("stdout: " << chat->output() << "\nstderr: " << chat->error_output());
  REQUIRE(stopped);
  chat->write_stdin("Hi\n");
  chat->close_stdin();
  REQUIRE(chat->wait(60s) == 0);
  const std::string log = chat->error_output();
  CHECK(count(log, " tokens/s, prompt ") == 2);  // the second turn was answered (200 tokens: length limit)
  CHECK(log.find("length limit") != std::string::npos);
}
