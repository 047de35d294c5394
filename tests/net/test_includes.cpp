// Keeps the module graph honest: net/'s public headers expose neither Asio nor generated
// FlatBuffers code, and every folder of gguf/, kernels/, net/ and engine/ includes only the
// floors below it (the table below, which engine/CMakeLists.txt declares as link dependencies).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// "x/y.h" from `#include "x/y.h"` or `#include <x/y.h>`; empty for other lines.
std::string included_path(const std::string& line) {
  size_t hash = line.find_first_not_of(" \t");
  if (hash == std::string::npos || line[hash] != '#') return {};
  size_t word = line.find_first_not_of(" \t", hash + 1);
  if (word == std::string::npos || line.compare(word, 7, "include") != 0) return {};
  size_t open = line.find_first_of("<\"", word + 7);
  if (open == std::string::npos) return {};
  size_t close = line.find_first_of(">\"", open + 1);
  if (close == std::string::npos) return {};
  return line.substr(open + 1, close - open - 1);
}

// The source tree: BATON_SOURCE_DIR from the build (tests/CMakeLists.txt), else from __FILE__.
fs::path source_root() {
#ifdef BATON_SOURCE_DIR
  return fs::path(BATON_SOURCE_DIR);
#else
  return fs::path(__FILE__).parent_path().parent_path().parent_path();
#endif
}

// The floors: each folder and the folders it may include directly (it may also include what
// those include, and so on down). engine/CMakeLists.txt declares the same edges as link
// dependencies; a new folder needs a row here and a baton_engine_floor() line there.
const std::map<std::string, std::vector<std::string>>& floor_table() {
  static const std::map<std::string, std::vector<std::string>> table = {
      {"engine/base", {}},
      {"gguf", {"engine/base"}},
      {"kernels", {"engine/base"}},
      {"net", {"engine/base"}},
      {"engine/sampling", {"engine/base"}},
      {"engine/tokenizer", {"gguf"}},
      {"engine/grammar", {"engine/tokenizer"}},
      {"engine/chat", {"engine/grammar", "gguf"}},
      {"engine/model", {"gguf", "kernels"}},
      {"engine/quantize", {"gguf", "kernels"}},
      {"engine/runtime", {"engine/model", "engine/sampling", "engine/tokenizer"}},
      {"engine/serving", {"engine/grammar", "engine/runtime"}},
      {"engine/cluster", {"engine/model", "gguf", "kernels", "net"}},
      {"engine/pipeline", {"engine/cluster", "engine/runtime", "net"}},
      {"engine/registry", {"engine/pipeline"}},
      {"engine/api", {"engine/chat", "engine/registry", "engine/serving"}},
  };
  return table;
}

// Third-party headers that only some floors may include (what keeps engine-worker free of them).
const std::vector<std::pair<std::string, std::set<std::string>>>& library_owners() {
  static const std::vector<std::pair<std::string, std::set<std::string>>> owners = {
      {"httplib.h", {"engine/api", "engine/registry"}},
      {"yaml-cpp/", {"engine/cluster"}},
      {"unicode/", {"engine/tokenizer"}},
  };
  return owners;
}

// `floor` and every floor below it.
std::set<std::string> floors_reachable_from(const std::string& floor) {
  std::set<std::string> seen;
  std::vector<std::string> todo{floor};
  while (!todo.empty()) {
    std::string f = todo.back();
    todo.pop_back();
    if (!seen.insert(f).second) continue;
    auto it = floor_table().find(f);
    if (it != floor_table().end()) todo.insert(todo.end(), it->second.begin(), it->second.end());
  }
  return seen;
}

// The floor an include path names ("engine/api" for "engine/api/x.h", "gguf" for "gguf/y.h"),
// or "" when it names none (system and third-party headers).
std::string floor_of_include(const std::string& inc) {
  for (const auto& [floor, below] : floor_table())
    if (inc.rfind(floor + "/", 0) == 0) return floor;
  for (const char* top : {"engine/", "tools/", "tests/", "bench/", "examples/"})
    if (inc.rfind(top, 0) == 0) return inc.substr(0, inc.find('/', std::string(top).size()));
  return {};
}

}  // namespace

TEST_CASE("every folder of gguf, kernels, net and engine includes only the floors below it") {
  const fs::path root = source_root();
  REQUIRE(fs::is_directory(root / "engine"));
  // Every engine/ folder has a row: a new folder must be placed before it can be built.
  for (const auto& entry : fs::directory_iterator(root / "engine")) {
    if (!entry.is_directory()) continue;
    std::string folder = "engine/" + entry.path().filename().string();
    INFO(folder << " has no row in the floor table (tests/net/test_includes.cpp)");
    CHECK(floor_table().count(folder) == 1);
  }
  size_t files = 0;
  for (const auto& [floor, below] : floor_table()) {
    const std::set<std::string> allowed = floors_reachable_from(floor);
    REQUIRE(fs::is_directory(root / floor));
    for (const auto& entry : fs::recursive_directory_iterator(root / floor)) {
      if (!entry.is_regular_file()) continue;
      auto ext = entry.path().extension();
      if (ext != ".h" && ext != ".cpp" && ext != ".inc") continue;
      ++files;
      std::ifstream in(entry.path());
      std::string line;
      while (std::getline(in, line)) {
        std::string inc = included_path(line);
        if (inc.empty()) continue;
        INFO(fs::relative(entry.path(), root).string() << " (floor " << floor << ") includes " << inc);
        std::string target = floor_of_include(inc);
        if (!target.empty()) CHECK(allowed.count(target) == 1);
        for (const auto& [header, owners] : library_owners())
          if (inc.rfind(header, 0) == 0) CHECK(owners.count(floor) == 1);
      }
    }
  }
  CHECK(files >= 300);
}

TEST_CASE("net public headers include neither Asio nor FlatBuffers, and net/ stays a leaf") {
  fs::path net_dir = source_root() / "net";
  REQUIRE(fs::is_directory(net_dir));
  size_t headers = 0;
  for (const auto& entry : fs::recursive_directory_iterator(net_dir)) {
    if (!entry.is_regular_file()) continue;
    auto ext = entry.path().extension();
    if (ext != ".h" && ext != ".cpp") continue;
    bool is_detail = entry.path().parent_path().filename() == "detail";
    bool public_header = ext == ".h" && !is_detail;
    headers += public_header;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      std::string inc = included_path(line);
      if (inc.empty()) continue;
      INFO(entry.path().string() << " includes " << inc);
      if (public_header) {
        CHECK(inc.find("asio") == std::string::npos);
        CHECK(inc.find("flatbuffers") == std::string::npos);
        CHECK(inc.find("_generated") == std::string::npos);
        CHECK(inc.find("detail/") == std::string::npos);
      }
      if (inc.find("_generated") != std::string::npos)  // the codec's two sources (encode, decode)
        CHECK((entry.path().filename() == "codec_encode.cpp" || entry.path().filename() == "codec_decode.cpp"));
      for (const char* other : {"gguf/", "kernels/", "engine/"})
        if (inc.rfind(other, 0) == 0) CHECK(inc.rfind("engine/base/", 0) == 0);
    }
  }
  CHECK(headers >= 7);
}
