// Keeps the module graph honest: net/'s public headers expose neither Asio nor generated
// FlatBuffers code, and net/ includes nothing from engine/ beyond engine/base.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

namespace fs = std::filesystem;

TEST_CASE("net public headers include neither Asio nor FlatBuffers, and net/ stays a leaf") {
  fs::path net_dir = fs::path(__FILE__).parent_path().parent_path().parent_path() / "net";
  REQUIRE(fs::is_directory(net_dir));
  std::regex include_re(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
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
      std::smatch match;
      if (!std::regex_search(line, match, include_re)) continue;
      std::string inc = match[1];
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
