// BPE pre-tokenizers by tokenizer.ggml.pre name: the regex splits the Hugging Face tokenizer
// applies before byte-level BPE (as llama.cpp lists them per pre type), plus the flags llama.cpp
// ties to each name. A pre-tokenizer is a sequence of regexes; each one splits every piece the
// previous one produced into matches and the text between them (both kept, "Isolated").
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace baton::tokenizer {

struct PreTokenizerSpec {
  std::vector<std::string_view> names;     // first is canonical, the rest are aliases
  std::vector<std::string_view> patterns;  // PCRE2 syntax, applied in order
  bool clean_spaces = true;                // detokenizer removes the space in " ," " ." " 's" ...
  bool ignore_merges = false;              // a pre-token that is itself a token is not merged further
  bool add_bos = false;                    // add BOS by default (tokenizer.ggml.add_bos_token overrides)
};

// The spec for `name` (canonical or alias), or nullptr when unknown.
const PreTokenizerSpec* find_pre_tokenizer(std::string_view name);
// llama.cpp's "default" (used for a missing or unknown pre).
const PreTokenizerSpec& default_pre_tokenizer();
// Every accepted name, for error messages and --help.
std::vector<std::string_view> pre_tokenizer_names();

// A compiled sequence of split regexes (PCRE2, UTF + Unicode properties, JIT when available).
// Thread-safe: split() allocates its own match data.
class RegexSplitter {
 public:
  // Throws baton::Error naming the pattern and the PCRE2 message if one does not compile.
  explicit RegexSplitter(const std::vector<std::string_view>& patterns);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  // Splits valid UTF-8 `text` into consecutive non-empty pieces that concatenate to `text`.
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  struct Compiled;
  std::vector<std::unique_ptr<Compiled>> regexes_;
};

}  // namespace baton::tokenizer
