// llama.cpp's tokenizer test vectors (test-tokenizer-0): every ggml-vocab-*.gguf with .inp/.out
// must reproduce the upstream Hugging Face tokenizer's ids exactly (no BOS, no special parsing).
#include <catch2/catch.hpp>

#include <filesystem>

#include "fixtures.h"
#include "vocab_cases.h"

using namespace baton;

namespace {

std::vector<std::string> vocab_names() {
  std::vector<std::string> names;
  const auto dir = std::filesystem::path(test::shared_dir()) / "models" / "vocab";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    const std::string suffix = ".gguf.inp";
    if (file.size() <= suffix.size() || !file.ends_with(suffix)) continue;
    const std::string stem = file.substr(0, file.size() - 4);  // ggml-vocab-NAME.gguf
    if (std::filesystem::exists(dir / stem)) names.push_back(stem);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("every ggml-vocab GGUF with test vectors tokenizes all its cases exactly") {
  const auto names = vocab_names();
  REQUIRE(names.size() >= 10);
  for (const auto& name : names) {
    INFO(name);
    const std::string base = "models/vocab/" + name;
    auto tok = test::load_tokenizer(test::shared_path(base));
    const auto cases = test::load_vocab_cases(test::shared_path(base + ".inp"), test::shared_path(base + ".out"));
    REQUIRE(cases.size() == 46);
    CHECK(test::run_vocab_cases(*tok, cases, name) == 46);
  }
}

TEST_CASE("llama-2-tiny-random carries the llama-spm tokenizer and passes its vectors") {
  auto tiny = test::load_tokenizer(test::shared_path("models/llama-2-tiny-random.gguf"));
  auto spm = test::load_tokenizer(test::shared_path("models/vocab/ggml-vocab-llama-spm.gguf"));
  REQUIRE(tiny->n_vocab() == spm->n_vocab());
  for (int32_t id = 0; id < spm->n_vocab(); ++id) {
    const auto& a = tiny->vocab().token(id);
    const auto& b = spm->vocab().token(id);
    if (a.text != b.text || a.score != b.score || a.type != b.type) FAIL("token " << id << " differs");
  }
  CHECK(tiny->bos() == spm->bos());
  CHECK(tiny->eos() == spm->eos());
  CHECK(tiny->add_bos_default() == spm->add_bos_default());
  const auto cases = test::load_vocab_cases(test::shared_path("models/vocab/ggml-vocab-llama-spm.gguf.inp"),
                                            test::shared_path("models/vocab/ggml-vocab-llama-spm.gguf.out"));
  CHECK(test::run_vocab_cases(*tiny, cases, "llama-2-tiny-random") == 46);
}
