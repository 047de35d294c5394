// The tokenizer vocabulary as stored in GGUF metadata (tokenizer.ggml.*): token texts, scores
// and types, BPE merge ranks, special token ids and the model's tokenization flags.
// Immutable after load; every method is const and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace baton::gguf {
class Metadata;
}

namespace baton::tokenizer {

inline constexpr int32_t kNoToken = -1;

// tokenizer.ggml.model
enum class VocabKind { kSpm /* "llama" */, kBpe /* "gpt2" */, kWpm /* "bert" */ };

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct TokenData {
  std::string text;
  float score = 0.0f;
  TokenType type = TokenType::kNormal;
  bool lstrip = false;  // when matched as a special token: eat whitespace to its left
  bool rstrip = false;  // ... and to its right
};

// Special token ids; kNoToken when the model has none.
struct SpecialTokens {
  int32_t bos = kNoToken, eos = kNoToken, eot = kNoToken, eom = kNoToken, unk = kNoToken;
  int32_t sep = kNoToken, pad = kNoToken, mask = kNoToken;
  int32_t fim_pre = kNoToken, fim_suf = kNoToken, fim_mid = kNoToken;
  int32_t fim_pad = kNoToken, fim_rep = kNoToken, fim_sep = kNoToken;
};

class Vocab {
 public:
  // Reads tokenizer.ggml.*; throws FormatError for missing/ill-typed/inconsistent keys
  // (naming the key) and UnsupportedError for an unknown tokenizer.ggml.model. An unknown
  // tokenizer.ggml.pre is logged as a warning and treated as "default" (as llama.cpp does
  // for a missing one).
  static Vocab from_metadata(const gguf::Metadata& md);

  VocabKind kind() const { return kind_; }
  const std::string& model_name() const { return model_name_; }  // tokenizer.ggml.model
  const std::string& pre_name() const { return pre_name_; }      // resolved pre-tokenizer name

  int32_t n_tokens() const { return static_cast<int32_t>(tokens_.size()); }
  bool valid(int32_t id) const { return id >= 0 && id < n_tokens(); }
  const TokenData& token(int32_t id) const { return tokens_[static_cast<size_t>(id)]; }
  TokenType type(int32_t id) const { return token(id).type; }
  // Id of the token with exactly this text (the last one if the vocab repeats a text), or kNoToken.
  int32_t find(std::string_view text) const;
  // Longest token text in bytes.
  size_t max_token_len() const { return max_token_len_; }

  // SPM byte fallback: the <0xXX> token of `byte`, else the one-byte token, else unk.
  int32_t byte_token(uint8_t byte) const;
  // BPE: rank of merging (left, right), or -1; `merged` receives the id of their concatenation.
  int32_t merge_rank(int32_t left, int32_t right, int32_t& merged) const;
  size_t n_merges() const { return merges_.size(); }

  const SpecialTokens& special() const { return special_; }
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }  // sorted
  bool is_eog(int32_t id) const;

  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool add_space_prefix() const { return add_space_prefix_; }
  bool remove_extra_whitespaces() const { return remove_extra_whitespaces_; }
  bool clean_spaces() const { return clean_spaces_; }    // detokenizer cleans " ," etc.
  bool ignore_merges() const { return ignore_merges_; }  // BPE: whole pre-token if in vocab

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Merge {
    int32_t rank;
    int32_t merged;
  };

  void read_tokens(const gguf::Metadata& md);
  void read_merges(const gguf::Metadata& md);
  void read_special_ids(const gguf::Metadata& md);
  void read_flags(const gguf::Metadata& md);
  void mark_end_of_generation();
  void apply_strip_attributes(const gguf::Metadata& md);

  VocabKind kind_ = VocabKind::kSpm;
  std::string model_name_;
  std::string pre_name_;
  std::vector<TokenData> tokens_;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> token_to_id_;
  std::unordered_map<uint64_t, Merge> merges_;  // key: left << 32 | right
  size_t max_token_len_ = 0;
  SpecialTokens special_;
  std::vector<int32_t> eog_ids_;
  bool add_bos_ = false;
  bool add_eos_ = false;
  bool add_space_prefix_ = false;
  bool remove_extra_whitespaces_ = false;
  bool clean_spaces_ = false;
  bool ignore_merges_ = false;
};

}  // namespace baton::tokenizer
