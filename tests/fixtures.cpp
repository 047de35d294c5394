#include "fixtures.h"

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <random>
#include <stdexcept>
#include <vector>

namespace fs = std::filesystem;

namespace baton::test {

const std::string& shared_dir() {
  static const std::string dir = [] {
    const char* env = std::getenv("BATON_SHARED");
    fs::path p = env && *env ? fs::path(env) : fs::path(BATON_SHARED_DIR_DEFAULT);
    if (!fs::is_directory(p / "models"))
      throw std::runtime_error("test fixtures not found: " + p.string() +
                               "/models does not exist (set BATON_SHARED or -DBATON_SHARED_DIR)");
    return fs::canonical(p).string();
  }();
  return dir;
}

std::string shared_path(const std::string& relative) {
  fs::path p = fs::path(shared_dir()) / relative;
  if (!fs::exists(p)) throw std::runtime_error("test fixture missing: " + p.string());
  return p.string();
}

std::string binary_dir() { return BATON_BINARY_DIR; }

namespace {
struct TempDirs {
  std::mutex mutex;
  std::vector<fs::path> dirs;
  ~TempDirs() {
    for (auto& d : dirs) {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  }
};
TempDirs& temp_dirs() {
  static TempDirs t;
  return t;
}
}  // namespace

std::string temp_dir() {
  std::random_device rd;
  fs::path p = fs::temp_directory_path() / ("baton-test-" + std::to_string(rd()) + std::to_string(rd()));
  fs::create_directories(p);
  std::lock_guard lock(temp_dirs().mutex);
  temp_dirs().dirs.push_back(p);
  return p.string();
}

}  // namespace baton::test
