// engine-gguf tokenize FILE TEXT [--bos] [--special]: the token ids of TEXT under FILE's
// tokenizer, printed as one JSON array. Works on vocab-only GGUF files.
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

#include "command.h"
#include "engine/base/error.h"
#include "engine/tokenizer/tokenizer.h"
#include "gguf/gguf_file.h"

namespace {

int run_tokenize(CLI::App& app, const baton::tools::ParseCommandLine& parse) {
  app.description("Print the token ids of a text as a JSON array");
  std::string path, text, text_file;
  bool bos = false, special = false;
  app.add_option("FILE", path, "GGUF file with tokenizer.ggml.* metadata (a vocab-only file will do)")->required();
  auto* text_opt = app.add_option("TEXT", text, "text to tokenize");
  app.add_option("-f,--file", text_file, "read the text from this file instead")->excludes(text_opt);
  app.add_flag("--bos", bos, "start with the model's BOS token");
  app.add_flag("--special", special, "recognise control-token texts such as <|im_start|> in the text");
  if (auto code = parse()) return *code;
  if (!text_file.empty()) {
    std::ifstream in(text_file, std::ios::binary);
    if (!in) baton::fail("cannot open {}", text_file);
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  } else if (text_opt->count() == 0) {
    baton::fail("no TEXT given (or use --file PATH)");
  }

  auto file = baton::gguf::GgufFile::open(path);
  auto tok = baton::tokenizer::Tokenizer::from_metadata(file->metadata());
  std::vector<int32_t> ids = tok->encode(text, /*add_special=*/false, special);
  if (bos) {
    if (tok->bos() == baton::tokenizer::kNoToken) baton::fail("--bos: {} has no BOS token", path);
    ids.insert(ids.begin(), tok->bos());
  }
  std::cout << nlohmann::json(ids).dump() << "\n";
  return 0;
}

const bool registered_tokenize = baton::tools::register_command(
    {"tokenize", "print the token ids of a text (JSON array) under a GGUF's tokenizer", run_tokenize});

}  // namespace
