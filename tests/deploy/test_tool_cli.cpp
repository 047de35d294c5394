// Every tool's command line as a new user types it (issue 29): `--version` with the wire protocol
// version, llama.cpp's flag names (--ctx-size, -np/--parallel, -b/--batch-size), -ngl accepted and
// ignored with a note instead of read as `-n gl`, one consistent help for engine-gguf's commands,
// and a warning for -c above the model's trained context. Real processes.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "fixtures.h"
#include "net/messages.h"
#include "support/process.h"

namespace {

baton::test::ProcessOptions cli_merged_output() {
  baton::test::ProcessOptions o;
  o.merge_stderr = true;
  return o;
}

std::string deploy_tool(const std::string& name) {
  const std::string path = baton::test::binary_dir() + "/bin/" + name;
  if (!std::filesystem::exists(path)) FAIL(name << " is not built in " << baton::test::binary_dir() << "/bin");
  return path;
}

baton::test::ShellResult run_tool_merged(const std::string& name, const std::string& args) {
  return baton::test::run_shell(deploy_tool(name) + " " + args + " 2>&1");
}

}  // namespace

TEST_CASE("every tool prints its version and the wire protocol version with --version") {
  const std::string protocol = "wire protocol " + std::to_string(baton::net::kProtocolVersion);
  for (const char* tool :
       {"engine-worker", "engine-coordinator", "engine-run", "engine-bench", "engine-ctl", "engine-gguf"}) {
    INFO(tool);
    const auto r = baton::test::run_shell(deploy_tool(tool) + " --version");  // stdout only: it is data
    CHECK(r.status == 0);
    CHECK_THAT(r.out, Catch::StartsWith(std::string(tool) + " ") && Catch::Contains(BATON_VERSION_FOR_TESTS) &&
                          Catch::Contains(protocol));
  }
}

TEST_CASE("engine-run takes llama.cpp's --ctx-size and -b and ignores -ngl with a note") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  // Before: `-ngl 99` parsed as `-n gl` ("Could not convert: -n = gl").
  const auto r =
      run_tool_merged("engine-run", "-m " + model + " -p 'Once upon' -n 4 --temp 0 -ngl 99 --ctx-size 128 -b 16");
  INFO(r.out);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("note: -ngl 99 ignored") && Catch::Contains("Once upon"));
  const auto eq = run_tool_merged("engine-run", "-m " + model + " -p Once -n 2 --n-gpu-layers=33 --json");
  INFO(eq.out);
  CHECK(eq.status == 0);
  CHECK_THAT(eq.out, Catch::Contains("note: --n-gpu-layers 33 ignored") && Catch::Contains("\"tokens\""));
}

TEST_CASE("engine-run warns when -c is above the model's trained context") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");  // trained with 2048 positions
  const auto above = run_tool_merged("engine-run", "-m " + model + " -p Once -n 2 --temp 0 -c 4096");
  INFO(above.out);
  CHECK(above.status == 0);
  CHECK_THAT(above.out, Catch::Contains("warning: -c 4096 is above the context the model was trained with (2048)"));
  const auto within = run_tool_merged("engine-run", "-m " + model + " -p Once -n 2 --temp 0 -c 2048");
  INFO(within.out);
  CHECK(within.status == 0);
  CHECK_THAT(within.out, !Catch::Contains("trained with"));
}

TEST_CASE("engine-coordinator takes -np, --ctx-size and --batch-size, and -ngl does not stop it") {
  const std::string model = baton::test::shared_path("models/stories260K.gguf");
  baton::test::Process coordinator({deploy_tool("engine-coordinator"), "-m", model, "--port", "0", "-np", "3",
                                    "--ctx-size", "256", "--batch-size", "64", "-ngl", "99"},
                                   cli_merged_output());
  const auto line = coordinator.wait_for_line("listening on http://", std::chrono::seconds(60));
  INFO(coordinator.output());
  REQUIRE(line);
  CHECK(coordinator.wait_for_output("context 256", std::chrono::seconds(10)));  // the log line after it
  CHECK_THAT(coordinator.output(),
             Catch::Contains("note: -ngl 99 ignored") && Catch::Contains("3 slots") && Catch::Contains("context 256"));
  CHECK(coordinator.terminate() == 0);
}

TEST_CASE("engine-gguf commands are CLI11 subcommands with one help") {
  const auto help = run_tool_merged("engine-gguf", "quantize --help");
  INFO(help.out);
  CHECK(help.status == 0);
  // Before: "Usage: quantize [OPTIONS] input output type".
  CHECK_THAT(help.out,
             Catch::Contains("Usage: ") && Catch::Contains("engine-gguf quantize [OPTIONS] input output type"));
  const auto top = run_tool_merged("engine-gguf", "--help");
  CHECK(top.status == 0);
  CHECK_THAT(top.out, Catch::Contains("engine-gguf") && Catch::Contains("quantize") && Catch::Contains("shard") &&
                          Catch::Contains("vocab-from-hf"));
  const auto none = run_tool_merged("engine-gguf", "");
  CHECK(none.status == 1);
  const auto unknown = run_tool_merged("engine-gguf", "frobnicate");
  CHECK(unknown.status == 1);
  CHECK_THAT(unknown.out, Catch::Contains("error: unknown command 'frobnicate'"));
}
