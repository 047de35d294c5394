// libFuzzer target: any byte string as a cluster YAML (engine/cluster/cluster_config.cpp),
// then, for a config that parses, the layer plan for a model of 1..64 layers. baton::Error
// (naming the file, line and field) is the expected refusal; any other exception, a crash, a
// hang or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/base/error.h"
#include "engine/cluster/cluster_config.h"
#include "engine/cluster/planner.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto config = baton::parse_cluster_config(text, "fuzz.yaml", "/nonexistent");
    (void)baton::plan_layers(config, 1 + static_cast<int64_t>(size % 64));
  } catch (const baton::Error&) {
  }
  return 0;
}
