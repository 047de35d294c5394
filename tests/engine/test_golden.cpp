// Greedy generation against llama.cpp's outputs for every golden file, in process.
#include <catch2/catch.hpp>

#include <filesystem>

#include "engine/runtime/generator.h"
#include "engine/runtime/local_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "gguf/gguf_file.h"
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

std::vector<std::string> golden_files(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(fs::path(shared_dir()) / "golden" / dir))
    if (e.path().extension() == ".json") files.push_back(dir + "/" + e.path().filename().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> all_golden_files() {
  auto files = golden_files("synthetic");
  for (const auto& f : golden_files("long")) files.push_back(f);
  files.push_back("stories260K.json");
  return files;
}

// Generates every case of a golden file and checks it by the golden rule.
void check_golden(const std::string& relative, int threads, float tolerance = kLogprobTolerance) {
  GoldenFile golden = load_golden(relative);
  LocalModelOptions lo;
  lo.threads = threads;
  lo.n_ctx = 2048;
  LocalModel model(golden_model_path(relative, golden), lo);
  for (const auto& c : golden.cases) {
    INFO(relative << ": prompt \"" << c.prompt.substr(0, 60) << "\"");
    auto ours = generate_greedy(model, c.prompt_tokens, c.n_predict);
    int compared = 0;
    std::string problem = compare_to_golden(c, ours, tolerance, &compared);
    INFO("compared " << compared << " steps");
    CHECK(problem == "");
  }
}

}  // namespace

TEST_CASE("every golden prompt tokenizes to exactly llama.cpp's prompt tokens") {
  auto files = all_golden_files();
  REQUIRE(files.size() >= 22);
  for (const auto& relative : files) {
    GoldenFile golden = load_golden(relative);
    auto file = gguf::GgufFile::open(golden_model_path(relative, golden));
    auto tok = tokenizer::Tokenizer::from_metadata(file->metadata());
    for (const auto& c : golden.cases) {
      INFO(relative << ": prompt \"" << c.prompt.substr(0, 60) << "\"");
      CHECK(tok->encode(c.prompt, true, true) == c.prompt_tokens);
    }
  }
}

// The float formats in llama.cpp's order (docs/NUMERICS.md: tinyBLAS for the rows of a multi-row
// pass, ggml_vec_dot_* for single rows, the last layer's FFN on the output rows only; the tiled
// attention mode for the 1,091-token prompt): exact to the printed decimals.
TEST_CASE("F32, F16 and BF16 models and the long stories260K prompt reproduce llama.cpp exactly (1e-4 logprob)") {
  for (const char* f : {"synthetic/tl256-F32.json", "synthetic/tq2-256-F32.json", "synthetic/tq3-256-F32.json",
                        "synthetic/tl256-F16.json", "synthetic/tl256-BF16.json", "stories260K.json",
                        "long/stories260K.json"}) {
    SECTION(f) { check_golden(f, 2, 1e-4f); }
  }
}

// The legacy formats with llama.cpp's x86 numerics emulated exactly (docs/NUMERICS.md: tinyBLAS /
// vec_dot summation order, Q4_0 repack order, FMA-contracted RoPE and softmax sum, ggml_v_expf
// SwiGLU): every
// log-probability equals the reference to its 6 printed decimals, so the tolerance here is 1e-4
// instead of the 0.01 (any change of rounding anywhere shows up as a failure).
TEST_CASE("Q8_0, Q4_0, Q5_0, Q4_1 and Q5_1 models reproduce llama.cpp exactly (1e-4 logprob)") {
  for (const char* f : {"synthetic/tl256-Q8_0.json", "synthetic/tq2-256-Q8_0.json", "synthetic/tq3-256-Q8_0.json",
                        "synthetic/tl256-Q4_0.json", "synthetic/tl256-Q5_0.json", "synthetic/tl256-Q4_1.json",
                        "synthetic/tl256-Q5_1.json"}) {
    SECTION(f) { check_golden(f, 2, 1e-4f); }
  }
}

// Q6_K, Q3_K and Q2_K in llama.cpp's AVX2 vec_dot order (docs/NUMERICS.md, kernels/kq_lanes_*):
// the models made of those types only reproduce llama.cpp to the printed decimals.
TEST_CASE("Q6_K and Q2_K models reproduce llama.cpp exactly (1e-4 logprob)") {
  for (const char* f : {"synthetic/tl256-Q6_K.json", "synthetic/tl256-Q2_K.json"}) {
    SECTION(f) { check_golden(f, 2, 1e-4f); }
  }
}

// Q5_K (with Q6_K) in llama.cpp's AVX2 vec_dot order (docs/NUMERICS.md, Q4_K and Q5_K section).
TEST_CASE("the Q5_K_M model reproduces llama.cpp exactly (1e-4 logprob)") {
  check_golden("synthetic/tl256-Q5_K_M.json", 2, 1e-4f);
}

// Known gap (issue 4): the K-quant models are not yet all within 0.01 (docs/NUMERICS.md has
// the figures and the causes). Tagged mayfail so
// that the suite reports every difference without failing; the strict cases above must pass.
TEST_CASE("every golden file reproduces llama.cpp within 0.01 logprob (known gaps)", "[!mayfail]") {
  for (const auto& f : all_golden_files()) {
    SECTION(f) { check_golden(f, 2); }
  }
}
