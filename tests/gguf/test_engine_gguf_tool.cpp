// The engine-gguf executable as a real process (built by the `engine-gguf` target; when it has
// not been built this test warns and returns).
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>

#include "fixtures.h"
#include "gguf/model_identity.h"
#include "gguf/shard.h"
#include "support/process.h"

using namespace baton::gguf;

namespace {

using Run = baton::test::ShellResult;

Run run(const std::string& args) {
  return baton::test::run_shell(baton::test::binary_dir() + "/bin/engine-gguf " + args + " 2>&1");
}

bool tool_built() {
  if (std::filesystem::exists(baton::test::binary_dir() + "/bin/engine-gguf")) return true;
  FAIL("engine-gguf is not built in " << baton::test::binary_dir() << "/bin; build the engine-gguf target");
  return false;
}

}  // namespace

TEST_CASE("engine-gguf info prints the header and totals of a model") {
  if (!tool_built()) return;
  const Run r = run(baton::test::shared_path("models/stories260K.gguf") + " ");  // no command
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains("error: unknown command") && Catch::Contains("info") && Catch::Contains("shard"));
  const Run info = run("info " + baton::test::shared_path("models/stories260K.gguf"));
  INFO(info.out);
  CHECK(info.status == 0);
  CHECK_THAT(info.out, Catch::Contains("version:   3") && Catch::Contains("metadata (19 keys)") &&
                           Catch::Contains("string[512]") && Catch::Contains("\"<unk>\", \"<s>\"") &&
                           Catch::Contains("tensors (48)") && Catch::Contains("[172, 64]") &&
                           Catch::Contains("total: 48 tensors, 1171200 bytes") && Catch::Contains("types: f32 x48"));
}

TEST_CASE("engine-gguf exits 1 with error: on a bad file or bad options") {
  if (!tool_built()) return;
  const Run q8 = run("info " + baton::test::shared_path("models/tinyllamas-stories-260k-q8_0.gguf"));
  CHECK(q8.status == 1);
  CHECK_THAT(q8.out, Catch::StartsWith("error: ") && Catch::Contains("blk.0.ffn_down.weight"));
  const Run missing = run("info /nonexistent/model.gguf");
  CHECK(missing.status == 1);
  CHECK_THAT(missing.out, Catch::StartsWith("error: ") && Catch::Contains("/nonexistent/model.gguf"));
  const Run layers = run("shard " + baton::test::shared_path("models/stories260K.gguf") + " --layers 2-x -o /tmp/x");
  CHECK(layers.status == 1);
  CHECK_THAT(layers.out, Catch::Contains("--layers '2-x'"));
}

TEST_CASE("engine-gguf shard writes the requested layers with the source identity") {
  if (!tool_built()) return;
  const std::string src = baton::test::shared_path("models/stories260K.gguf");
  const std::string out = baton::test::temp_dir() + "/s.gguf";
  const Run r = run("shard " + src + " --layers 3-4 --with-output -o " + out);
  INFO(r.out);
  REQUIRE(r.status == 0);
  auto shard = GgufFile::open(out);
  CHECK(shard->tensors().size() == 20);
  CHECK(shard->find_tensor("output.weight"));
  CHECK(!shard->find_tensor("token_embd.weight"));
  CHECK(held_layers(*shard).first == 3);
  CHECK(held_layers(*shard).last == 4);
  CHECK(model_identity(*shard) == model_identity(*GgufFile::open(src)));
  const Run beyond = run("shard " + src + " --layers 4-5 -o " + out + ".2");
  CHECK(beyond.status == 1);
  CHECK_THAT(beyond.out, Catch::Contains("has 5 layers (0-4), asked for 4-5"));
}
