// vocab-from-hf: a GGUF vocabulary built from Hugging Face tokenizer files reproduces the
// upstream tokenizer (Qwen2's test vectors, whose GGUF is not among the fixtures).
#include <catch2/catch.hpp>

#include <filesystem>
#include <cstdlib>
#include <fstream>

#include "engine/base/error.h"
#include "engine/tokenizer/hf_vocab.h"
#include "fixtures.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "vocab_cases.h"

using namespace baton;
using tokenizer::Tokenizer;

TEST_CASE("a vocab GGUF built from qwen2-hf passes the qwen2 vectors after a write and reopen") {
  const auto md = tokenizer::metadata_from_hf_dir(test::shared_path("models/vocab/qwen2-hf"));
  CHECK(md.find_string("tokenizer.ggml.pre") == "qwen2");  // recognised from the merges
  const std::string path = test::temp_dir() + "/qwen2-vocab.gguf";
  gguf::GgufWriter(md).write(path);
  auto file = gguf::GgufFile::open(path);
  auto tok = Tokenizer::from_metadata(file->metadata());
  CHECK(tok->n_vocab() == 151646);
  CHECK(tok->vocab().n_merges() == 151387);
  const int32_t im_start = tok->find_token("<|im_start|>");
  const int32_t im_end = tok->find_token("<|im_end|>");
  CHECK(im_start == 151644);
  CHECK(tok->is_control(im_start));
  CHECK(tok->eos() == 151643);
  CHECK(tok->is_eog(im_end));
  CHECK_FALSE(tok->add_bos_default());

  const auto cases = test::load_vocab_cases(test::shared_path("models/vocab/ggml-vocab-qwen2.gguf.inp"),
                                            test::shared_path("models/vocab/ggml-vocab-qwen2.gguf.out"));
  CHECK(test::run_vocab_cases(*tok, cases, "qwen2 (from qwen2-hf)") == 46);
  for (const auto& c : cases) CHECK(tok->detokenize(c.ids) == c.text);  // qwen2 keeps spaces as they are

  const auto chat = tok->encode("<|im_start|>user\nHi<|im_end|>\n", false, true);
  REQUIRE(chat.size() >= 4);
  CHECK(chat.front() == im_start);
  CHECK(std::find(chat.begin(), chat.end(), im_end) != chat.end());
}

TEST_CASE("vocab-from-hf asks for --pre when it cannot tell the pre-tokenizer") {
  const std::string dir = test::temp_dir();
  const auto src = std::filesystem::path(test::shared_path("models/vocab/qwen2-hf"));
  std::filesystem::copy_file(src / "vocab.json", std::filesystem::path(dir) / "vocab.json");
  {
    std::ofstream merges(std::filesystem::path(dir) / "merges.txt");
    merges << "#version: 0.2\n\xC4\xA0 t\n";
  }
  CHECK_THROWS_WITH(tokenizer::metadata_from_hf_dir(dir), Catch::Contains("--pre"));
  CHECK_THROWS_WITH(tokenizer::metadata_from_hf_dir(dir, {"no-such-pre"}), Catch::Contains("no-such-pre"));
  const auto md = tokenizer::metadata_from_hf_dir(dir, {"gpt-2"});
  CHECK(md.find_string_array("tokenizer.ggml.merges")->size() == 1);  // #version line skipped
  CHECK(Tokenizer::from_metadata(md)->vocab().pre_name() == "gpt-2");
}

TEST_CASE("engine-gguf vocab-from-hf and tokenize work end to end as a process") {
  const std::string tool = test::binary_dir() + "/bin/engine-gguf";
  if (!std::filesystem::exists(tool)) {
    FAIL("engine-gguf is not built (" << tool << "); build it to run this test");
  }
  const std::string dir = test::temp_dir();
  const std::string out = dir + "/qwen2.gguf";
  const std::string log = dir + "/log.txt";
  REQUIRE(std::system((tool + " vocab-from-hf '" + test::shared_path("models/vocab/qwen2-hf") + "' -o '" + out +
                       "' > '" + log + "' 2>&1")
                          .c_str()) == 0);
  REQUIRE(std::system((tool + " tokenize '" + out + "' 'Hello, y'\\''all!' > '" + log + "' 2>&1").c_str()) == 0);
  CHECK(test::read_file(log) == "[9707,11,379,64848,0]\n");
  REQUIRE(std::system((tool + " tokenize '" + test::shared_path("models/stories260K.gguf") +
                       "' 'Once upon a time' --bos > '" + log + "' 2>&1")
                          .c_str()) == 0);
  CHECK(test::read_file(log) == "[1,403,407,261,378]\n");
  CHECK(std::system((tool + " tokenize /nonexistent.gguf x > '" + log + "' 2>&1").c_str()) != 0);
  CHECK_THAT(test::read_file(log), Catch::StartsWith("error: "));
}
