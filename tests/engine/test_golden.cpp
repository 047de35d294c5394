// Greedy generation against llama.cpp's outputs for every golden file, in process.
#include <catch2/catch.hpp>

#include <filesystem>

#include "engine/runtime/generator.h"
#include "engine/runtime/local_model.h"
#include "fixtures.h"
#include "golden.h"

using namespace baton;
using namespace baton::test;

namespace {

constexpr float kLogprobTolerance = 0.01f;

std::vector<OurStep> generate_greedy(LocalModel& model, const std::vector<int32_t>& prompt, int n_predict) {
  GenerateOptions go;
  go.n_predict = n_predict;
  go.sampling.temperature = 0;
  go.n_top_logprobs = 64;
  Generator gen(model.head(), model.layers());
  auto result = gen.generate(7, prompt, go);
  std::vector<OurStep> ours;
  for (const auto& s : result.steps) {
    OurStep o{s.token, {}};
    for (const auto& t : s.top) o.logprobs.push_back({t.id, t.logprob});
    ours.push_back(std::move(o));
  }
  return ours;
}

void check_golden(const std::string& relative, int threads, std::vector<std::pair<int64_t, int64_t>> split = {}) {
  GoldenFile golden = load_golden(relative);
  LocalModelOptions lo;
  lo.threads = threads;
  lo.n_ctx = 2048;
  lo.layer_ranges = std::move(split);
  LocalModel model(golden_model_path(relative, golden), lo);
  for (const auto& c : golden.cases) {
    INFO(relative << ": prompt \"" << c.prompt.substr(0, 60) << "\"");
    CHECK(model.tokenizer().encode(c.prompt, true, true) == c.prompt_tokens);
    auto ours = generate_greedy(model, c.prompt_tokens, c.n_predict);
    int compared = 0;
    std::string problem = compare_to_golden(c, ours, kLogprobTolerance, &compared);
    INFO("compared " << compared << " steps");
    CHECK(problem == "");
  }
}

}  // namespace

TEST_CASE("stories260K reproduces llama.cpp's greedy tokens and log-probabilities") {
  check_golden("stories260K.json", 1);
}

TEST_CASE("stories260K reproduces llama.cpp on a 1,090-token prompt") { check_golden("long/stories260K.json", 2); }

TEST_CASE("a Q4_K_M model reproduces llama.cpp on a 1,090-token prompt") {
  check_golden("long/tl256-Q4_K_M.json", 2);
}

TEST_CASE("every synthetic model reproduces llama.cpp's greedy output") {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(fs::path(shared_dir()) / "golden" / "synthetic"))
    if (e.path().extension() == ".json") files.push_back("synthetic/" + e.path().filename().string());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 19);
  for (const auto& f : files) {
    SECTION(f) { check_golden(f, 2); }
  }
}
