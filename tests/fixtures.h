// Where the test fixtures are: ../shared (models, llama.cpp golden outputs) by default, or
// the directory in the environment variable BATON_SHARED. A missing directory is a loud
// failure, never a skip.
#pragma once

#include <string>

namespace baton::test {

// Absolute path of the shared fixture directory; throws if it does not exist.
const std::string& shared_dir();
// shared_dir() + "/" + relative; throws naming the path if the file does not exist.
std::string shared_path(const std::string& relative);
// The build directory; executables are in binary_dir() + "/bin".
std::string binary_dir();
// A fresh empty directory under the system temp dir, removed at exit.
std::string temp_dir();

}  // namespace baton::test
