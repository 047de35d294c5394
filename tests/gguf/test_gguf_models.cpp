// Every fixture model loads, or is refused with a message naming the reason.
#include <catch2/catch.hpp>

#include <filesystem>

#include "engine/base/error.h"
#include "fixtures.h"
#include "gguf/gguf_file.h"

using namespace baton;
using namespace baton::gguf;
using baton::test::shared_path;

namespace {
std::string error_of(const std::string& path) {
  try {
    GgufFile::open(path);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("every fixture model loads or is refused with the reason") {
  namespace fs = std::filesystem;
  int loaded = 0, refused = 0;
  for (const auto& entry : fs::recursive_directory_iterator(shared_path("models"))) {
    if (!entry.is_regular_file() || entry.path().extension() != ".gguf") continue;
    const std::string path = entry.path().string();
    const std::string name = entry.path().filename().string();
    INFO(path);
    if (name == "tinyllamas-stories-260k-q8_0.gguf") {
      std::string msg = error_of(path);
      CHECK_THAT(
          msg, Catch::Contains("blk.0.ffn_down.weight") && Catch::Contains("172") && Catch::Contains("block size 32"));
      ++refused;
      continue;
    }
    if (entry.path().parent_path().filename() == "legacy") {
      CHECK_THAT(error_of(path), Catch::Contains("GGUF v1 is not supported"));
      ++refused;
      continue;
    }
    auto f = GgufFile::open(path);
    CHECK((f->version() == 2 || f->version() == 3));
    CHECK(f->metadata().find_string("general.architecture").has_value());
    uint64_t last_end = 0;
    for (const auto& t : f->tensors()) {
      CHECK(f->tensor_data(t).size() == t.n_bytes);
      last_end = std::max(last_end, f->tensor_file_offset(t) + t.n_bytes);
    }
    // The fixtures are tightly packed: the last tensor ends exactly at the end of the file.
    if (!f->tensors().empty()) CHECK(last_end == f->part_file_bytes(0));
    ++loaded;
  }
  CHECK(refused == 2);
  CHECK(loaded >= 33);
}
