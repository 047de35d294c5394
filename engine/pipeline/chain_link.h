// Internal to pipeline::Chain's .cpp files (chain.cpp, chain_load.cpp, remote_layers.cpp):
// one worker's link and two small helpers.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <variant>

#include "engine/pipeline/chain.h"
#include "net/node.h"

namespace baton::pipeline {

struct Chain::Link {
  net::ConnectionPtr connection;  // replaced only by connect_link (the runner's thread)
  mutable std::mutex mutex;
  uint64_t current = 0;               // guarded: id of `connection` (a late close of an older one is ignored)
  std::optional<std::string> closed;  // guarded: why the connection ended
};

inline std::chrono::milliseconds chain_seconds_ms(double s) {
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000.0));
}

template <class T>
const T* message_as(const net::Incoming& in) {
  return std::get_if<T>(&in.message);
}

}  // namespace baton::pipeline
