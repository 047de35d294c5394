// Loading of llama.cpp's tokenizer test vectors (see vocab_cases.h).
#include "vocab_cases.h"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "gguf/gguf_file.h"

namespace baton::test {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<VocabCase> load_vocab_cases(const std::string& inp_path, const std::string& out_path) {
  const std::string separator = "\n__ggml_vocab_test__\n";
  const std::string inp = read_file(inp_path);
  std::vector<std::string> texts;
  size_t pos = 0;
  for (size_t hit; (hit = inp.find(separator, pos)) != std::string::npos; pos = hit + separator.size())
    texts.push_back(inp.substr(pos, hit - pos));
  if (pos < inp.size()) texts.push_back(inp.substr(pos));

  std::istringstream out(read_file(out_path));
  std::vector<VocabCase> cases;
  std::string line;
  for (size_t i = 0; std::getline(out, line); ++i) {
    if (i >= texts.size()) throw std::runtime_error(out_path + " has more lines than " + inp_path);
    VocabCase c{texts[i], {}};
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  if (cases.size() != texts.size())
    throw std::runtime_error(fmt::format("{}: {} texts but {} lines of ids", inp_path, texts.size(), cases.size()));
  return cases;
}

std::unique_ptr<tokenizer::Tokenizer> load_tokenizer(const std::string& gguf_path) {
  auto file = gguf::GgufFile::open(gguf_path);
  return tokenizer::Tokenizer::from_metadata(file->metadata());
}

int run_vocab_cases(const tokenizer::Tokenizer& tok, const std::vector<VocabCase>& cases, const std::string& name) {
  int passed = 0;
  int shown = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto got = tok.encode(cases[i].text, /*add_special=*/false, /*parse_special=*/false);
    if (got == cases[i].ids) {
      ++passed;
    } else if (shown++ < 5) {
      std::cout << fmt::format("  {} case {} {:?}\n    expected {}\n    got      {}\n", name, i,
                               cases[i].text.substr(0, 60), fmt::join(cases[i].ids, " "), fmt::join(got, " "));
    }
  }
  std::cout << fmt::format("{}: {}/{} cases\n", name, passed, cases.size());
  return passed;
}

}  // namespace baton::test
