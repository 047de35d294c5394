// libFuzzer target: any byte string through the tokenizer (bytes in -> ids) of a real
// vocabulary, loaded once per process from $BATON_FUZZ_VOCAB (default: the llama SPM vocab
// of the shared fixtures). The first byte chooses add_special / parse_special; the rest is
// the text. Every id must be in range and detokenize must accept them; any exception, crash
// or sanitizer report is a bug (encode accepts every byte string, valid UTF-8 or not).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "engine/tokenizer/tokenizer.h"
#include "gguf/gguf_file.h"

#ifndef BATON_FUZZ_DEFAULT_VOCAB
#define BATON_FUZZ_DEFAULT_VOCAB "/work/shared/models/vocab/ggml-vocab-llama-spm.gguf"
#endif

namespace {

const baton::tokenizer::Tokenizer& tokenizer() {
  static const std::unique_ptr<baton::tokenizer::Tokenizer> t = [] {
    const char* path = std::getenv("BATON_FUZZ_VOCAB");
    auto file = baton::gguf::GgufFile::open(path ? path : BATON_FUZZ_DEFAULT_VOCAB);
    return baton::tokenizer::Tokenizer::from_metadata(file->metadata());
  }();
  return *t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& t = tokenizer();
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto ids = t.encode(text, (data[0] & 1) != 0, (data[0] & 2) != 0);
  for (int32_t id : ids)
    if (id < 0 || id >= t.n_vocab()) std::abort();
  (void)t.detokenize(ids, (data[0] & 4) != 0);
  return 0;
}
