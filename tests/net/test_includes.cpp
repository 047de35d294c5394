// Keeps the module graph honest: net/'s public headers expose neither Asio nor generated
// FlatBuffers code, and net/ includes nothing from engine/ beyond engine/base.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

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

}  // namespace

TEST_CASE("net public headers include neither Asio nor FlatBuffers, and net/ stays a leaf") {
  fs::path net_dir = fs::path(__FILE__).parent_path().parent_path().parent_path() / "net";
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
      if (inc.find("_generated") != std::string::npos)
        CHECK(entry.path().filename() == "codec.cpp");
      for (const char* other : {"gguf/", "kernels/", "engine/"})
        if (inc.rfind(other, 0) == 0) CHECK(inc.rfind("engine/base/", 0) == 0);
    }
  }
  CHECK(headers >= 7);
}
