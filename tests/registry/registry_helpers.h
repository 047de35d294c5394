// Helpers shared by the registry tests: a greedy reference generation and planner options.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/model_head.h"
#include "engine/cluster/planner.h"
#include "engine/registry/dynamic_cluster.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/layer_runner.h"
#include "engine/tokenizer/tokenizer.h"

namespace baton::test {

inline constexpr uint64_t kMiB = 1ull << 20;

// The registry tests' model, relative to the fixture directory (shared_path).
inline const std::string kStoriesModel = "models/stories260K.gguf";

// n greedy tokens after "Once upon a time" (with BOS), through any runner.
inline std::vector<int32_t> generate_tokens(LayerRunner& layers, ModelHead& head, const tokenizer::Tokenizer& tok,
                                            int n = 12) {
  GenerateOptions go;
  go.n_predict = n;
  go.sampling.temperature = 0;
  Generator g(head, layers);
  std::vector<int32_t> out;
  for (const auto& s : g.generate(1, tok.encode("Once upon a time", true, true), go).steps) out.push_back(s.token);
  return out;
}

// The loaded pipeline of a dynamic cluster with the model front it runs on: the chain's
// runner, the front's head and tokenizer (a chain holds no model).
struct LoadedPipeline {
  LayerRunner& runner;
  ModelFront& front;
  LayerRunner& layers() { return runner; }
  ModelHead& head() { return front.head(); }
  const tokenizer::Tokenizer& tokenizer() const { return front.tokenizer(); }
};
inline LoadedPipeline loaded_pipeline(registry::DynamicCluster& dc) { return {dc.cluster().layers(), *dc.front()}; }

// A planner that keeps no memory in reserve, so the tests' small figures fit exactly.
inline PlannerOptions no_headroom() {
  PlannerOptions o;
  o.headroom_bytes = 0;
  o.headroom_fraction = 0;
  return o;
}

}  // namespace baton::test
