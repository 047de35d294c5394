// engine-gguf vocab-from-hf DIR -o OUT.gguf [--pre NAME]: writes a vocab-only GGUF from a Hugging
// Face byte-level BPE tokenizer (vocab.json, merges.txt, tokenizer_config.json).
#include <fmt/format.h>

#include "command.h"
#include "engine/tokenizer/hf_vocab.h"
#include "engine/tokenizer/tokenizer.h"
#include "gguf/gguf_writer.h"

namespace {

int run_vocab_from_hf(CLI::App& app, const baton::tools::ParseCommandLine& parse) {
  app.description("Write a vocab-only GGUF from Hugging Face tokenizer files");
  std::string dir, out;
  baton::tokenizer::HfVocabOptions options;
  app.add_option("DIR", dir, "directory with vocab.json, merges.txt and tokenizer_config.json")->required();
  app.add_option("-o,--output", out, "GGUF file to write")->required();
  app.add_option("--pre", options.pre,
                 "pre-tokenizer (tokenizer.ggml.pre), e.g. qwen2, llama3, gpt-2; default: recognised "
                 "from the merges or the tokenizer class");
  if (auto code = parse()) return *code;

  baton::gguf::Metadata md = baton::tokenizer::metadata_from_hf_dir(dir, options);
  auto tok = baton::tokenizer::Tokenizer::from_metadata(md);  // validates before writing
  baton::gguf::GgufWriter(std::move(md)).write(out);
  fmt::print("wrote {}: {} tokens, {} merges, pre-tokenizer {}\n", out, tok->n_vocab(), tok->vocab().n_merges(),
             tok->vocab().pre_name());
  return 0;
}

const bool registered_vocab_from_hf = baton::tools::register_command(
    {"vocab-from-hf", "write a vocab-only GGUF from Hugging Face tokenizer files", run_vocab_from_hf});

}  // namespace
