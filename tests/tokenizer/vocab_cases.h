// Test helpers: load a GGUF's tokenizer and llama.cpp's tokenizer test vectors
// (ggml-vocab-*.gguf.inp / .out) from the shared fixtures.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace baton::test {

struct VocabCase {
  std::string text;
  std::vector<int32_t> ids;
};

// The 46 cases of <vocab>.inp/.out (paths relative to the shared dir).
std::vector<VocabCase> load_vocab_cases(const std::string& inp_path, const std::string& out_path);
std::unique_ptr<tokenizer::Tokenizer> load_tokenizer(const std::string& gguf_path);
std::string read_file(const std::string& path);
// Passing cases; prints "<name>: n/m" and the first failures to stdout.
int run_vocab_cases(const tokenizer::Tokenizer& tok, const std::vector<VocabCase>& cases, const std::string& name);

}  // namespace baton::test
