// Project exceptions. Thrown at load/config/API boundaries with a message that names the
// file, key, tensor or field and what was expected; kernels never throw.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace baton {

// Any bad or unsupported input: a file, a config, a request.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A file or buffer that does not follow its format (GGUF, frames, JSON ...).
class FormatError : public Error {
 public:
  using Error::Error;
};

// Valid input that this build cannot handle (an unknown architecture, a quant type without kernels).
class UnsupportedError : public Error {
 public:
  using Error::Error;
};

template <class E = Error, class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw E(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace baton
