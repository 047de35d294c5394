// Compiled alone with BATON_VERSION set (engine/CMakeLists.txt), so a new version rebuilds one file.
#include "engine/api/operator_metrics.h"

#ifndef BATON_VERSION
#define BATON_VERSION ""
#endif

namespace baton::api {

std::string build_version() {
  const std::string v = BATON_VERSION;
  return v.empty() ? "unknown" : v;
}

}  // namespace baton::api
