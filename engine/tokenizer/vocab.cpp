// Loads the tokenizer vocabulary from GGUF metadata, following llama.cpp's defaults for each
// tokenizer model and pre-tokenizer so that the same file tokenizes the same way.
#include "engine/tokenizer/vocab.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <span>

#include "engine/base/error.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "gguf/gguf_metadata.h"

namespace baton::tokenizer {
namespace {

constexpr std::string_view kKeyModel = "tokenizer.ggml.model";
constexpr std::string_view kKeyPre = "tokenizer.ggml.pre";
constexpr std::string_view kKeyTokens = "tokenizer.ggml.tokens";
constexpr std::string_view kKeyScores = "tokenizer.ggml.scores";
constexpr std::string_view kKeyTypes = "tokenizer.ggml.token_type";
constexpr std::string_view kKeyMerges = "tokenizer.ggml.merges";

// Texts that end generation (llama.cpp detects these by text, whatever the file says). "</s>"
// is one since llama.cpp added it for paddleocr: a USER_DEFINED "</s>" (Phi-3's) thereby becomes
// CONTROL and is no longer parsed as a special token when special-token parsing is off.
constexpr std::array<const char*, 12> kEogTexts = {
    "<|eot_id|>",    "<|im_end|>", "<|end|>",    "<|return|>", "<|call|>", "<end_of_turn>",
    "<|endoftext|>", "</s>",       "<|eom_id|>", "<EOT>",      "_<EOT>",   "<end_of_utterance>",
};
constexpr std::array<const char*, 9> kEotTexts = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<EOT>",
    "_<EOT>",
    "<\xEF\xBD\x9C"
    "end\xE2\x96\x81"
    "of\xE2\x96\x81"
    "sentence\xEF\xBD\x9C>",  // DeepSeek
    "<end_of_utterance>",
};

// An integer id key: nullopt when absent; kNoToken for -1/0xFFFFFFFF/out of range.
std::optional<int32_t> read_id(const gguf::Metadata& md, std::string_view key, int32_t n_tokens) {
  const gguf::Value* v = md.find(key);
  if (!v) return std::nullopt;
  int64_t id = 0;
  if (const auto* u = std::get_if<uint64_t>(&v->data); u && !v->is_array()) {
    id = *u > static_cast<uint64_t>(INT32_MAX) ? -1 : static_cast<int64_t>(*u);
  } else if (const auto* s = std::get_if<int64_t>(&v->data); s && !v->is_array()) {
    id = *s;
  } else {
    fail<FormatError>("metadata key '{}': expected an integer token id, found {}", key, gguf::value_type_name(v->type));
  }
  if (id < 0 || id >= n_tokens) {
    if (id != -1 && id != 0xFFFFFFFF)
      spdlog::warn("tokenizer: {} = {} is outside the vocabulary of {} tokens; treated as unset", key, id, n_tokens);
    return kNoToken;
  }
  return static_cast<int32_t>(id);
}

std::string lowercase_ascii(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

Vocab Vocab::from_metadata(const gguf::Metadata& md) {
  Vocab v;
  const auto model = md.find_string(kKeyModel);
  if (!model) fail<FormatError>("metadata key '{}' is missing: the file has no tokenizer", kKeyModel);
  v.model_name_ = *model;
  if (*model == "llama") {
    v.kind_ = VocabKind::kSpm;
  } else if (*model == "gpt2") {
    v.kind_ = VocabKind::kBpe;
  } else if (*model == "bert") {
    v.kind_ = VocabKind::kWpm;
  } else {
    fail<UnsupportedError>("{} = '{}' is not supported (supported: llama, gpt2, bert)", kKeyModel, *model);
  }
  v.read_tokens(md);
  v.read_flags(md);
  if (v.kind_ == VocabKind::kBpe) v.read_merges(md);
  v.read_special_ids(md);
  v.mark_end_of_generation();
  v.apply_strip_attributes(md);
  return v;
}

int32_t Vocab::find(std::string_view text) const {
  auto it = token_to_id_.find(text);
  return it == token_to_id_.end() ? kNoToken : it->second;
}

int32_t Vocab::byte_token(uint8_t byte) const {
  static constexpr char kHex[] = "0123456789ABCDEF";
  const char name[] = {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
  int32_t id = find(std::string_view(name, sizeof(name)));
  if (id == kNoToken) id = find(std::string_view(reinterpret_cast<const char*>(&byte), 1));
  if (id == kNoToken) id = special_.unk;
  return id;
}

int32_t Vocab::merge_rank(int32_t left, int32_t right, int32_t& merged) const {
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  auto it = merges_.find(key);
  if (it == merges_.end()) return -1;
  merged = it->second.merged;
  return it->second.rank;
}

bool Vocab::is_eog(int32_t id) const { return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id); }

void Vocab::read_tokens(const gguf::Metadata& md) {
  const auto* texts = md.find_string_array(kKeyTokens);
  if (!texts) fail<FormatError>("metadata key '{}' is missing", kKeyTokens);
  const size_t n = texts->size();
  if (n == 0 || n > static_cast<size_t>(INT32_MAX)) fail<FormatError>("metadata key '{}' has {} tokens", kKeyTokens, n);
  const auto scores = md.find_float_array(kKeyScores);
  if (scores && scores->size() != n)
    fail<FormatError>("metadata key '{}' has {} entries, expected {} (one per token)", kKeyScores, scores->size(), n);
  const auto types = md.find_int_array(kKeyTypes);
  if (types && types->size() != n)
    fail<FormatError>("metadata key '{}' has {} entries, expected {} (one per token)", kKeyTypes, types->size(), n);
  tokens_.resize(n);
  token_to_id_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    TokenData& t = tokens_[i];
    t.text = (*texts)[i];
    if (t.text.empty()) {
      spdlog::warn("tokenizer: empty token text at index {}", i);
      t.text = "[EMPTY_" + std::to_string(i) + "]";
    }
    t.score = scores ? static_cast<float>((*scores)[i]) : 0.0f;
    if (types) {
      const int64_t ty = (*types)[i];
      t.type = ty >= 0 && ty <= 6 ? static_cast<TokenType>(ty) : TokenType::kUndefined;
    }
    token_to_id_.insert_or_assign(t.text, static_cast<int32_t>(i));
    max_token_len_ = std::max(max_token_len_, t.text.size());
  }
}

void Vocab::read_flags(const gguf::Metadata& md) {
  const auto pre = md.find_string(kKeyPre);
  switch (kind_) {
    case VocabKind::kSpm:
      add_space_prefix_ = true, add_bos_ = true, clean_spaces_ = false;
      pre_name_ = pre.value_or("default");
      break;
    case VocabKind::kWpm:
      add_space_prefix_ = false, add_bos_ = true, clean_spaces_ = true;
      pre_name_ = pre.value_or("default");
      break;
    case VocabKind::kBpe: {
      const PreTokenizerSpec* spec = pre ? find_pre_tokenizer(*pre) : nullptr;
      if (!pre) {
        spdlog::warn(
            "tokenizer: {} is missing; using the 'default' pre-tokenizer (generation "
            "quality may suffer)",
            kKeyPre);
      } else if (!spec) {
        spdlog::warn("tokenizer: unknown {} '{}'; using the 'default' pre-tokenizer", kKeyPre, *pre);
      }
      if (!spec) spec = &default_pre_tokenizer();
      pre_name_ = std::string(spec->names.front());
      add_space_prefix_ = false;
      clean_spaces_ = spec->clean_spaces;
      ignore_merges_ = spec->ignore_merges;
      add_bos_ = spec->add_bos;
      break;
    }
  }
  if (auto b = md.find_bool("tokenizer.ggml.add_space_prefix")) add_space_prefix_ = *b;
  if (auto b = md.find_bool("tokenizer.ggml.remove_extra_whitespaces")) remove_extra_whitespaces_ = *b;
  if (auto b = md.find_bool("tokenizer.ggml.add_bos_token")) add_bos_ = *b;
  if (auto b = md.find_bool("tokenizer.ggml.add_eos_token")) add_eos_ = *b;
}

void Vocab::read_merges(const gguf::Metadata& md) {
  const auto* merges = md.find_string_array(kKeyMerges);
  if (!merges) fail<FormatError>("metadata key '{}' is missing (required for tokenizer model gpt2)", kKeyMerges);
  merges_.reserve(merges->size());
  size_t skipped = 0;
  std::string joined;
  for (size_t i = 0; i < merges->size(); ++i) {
    std::string_view m = (*merges)[i];
    const size_t space = m.find(' ', 1);
    if (space == std::string_view::npos) {
      ++skipped;
      continue;
    }
    const int32_t left = find(m.substr(0, space));
    const int32_t right = find(m.substr(space + 1));
    if (left == kNoToken || right == kNoToken) {
      ++skipped;
      continue;
    }
    joined.assign(m.substr(0, space));
    joined.append(m.substr(space + 1));
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    merges_.try_emplace(key, Merge{static_cast<int32_t>(i), find(joined)});
  }
  if (skipped)
    spdlog::warn("tokenizer: {} of {} merges in {} name tokens that are not in the vocabulary; ignored", skipped,
                 merges->size(), kKeyMerges);
}

void Vocab::read_special_ids(const gguf::Metadata& md) {
  const int32_t n = n_tokens();
  auto dflt = [n](int32_t id) { return id < n ? id : kNoToken; };
  switch (kind_) {
    case VocabKind::kSpm: special_.bos = dflt(1), special_.eos = dflt(2), special_.unk = dflt(0); break;
    case VocabKind::kWpm:
      special_.bos = dflt(101), special_.unk = dflt(100), special_.sep = dflt(102);
      special_.pad = dflt(0), special_.mask = dflt(103);
      break;
    case VocabKind::kBpe:
      special_.bos = dflt(11), special_.eos = dflt(11);  // llama.cpp's (Falcon's) defaults
      if (pre_name_ == "chatglm-bpe") special_.bos = kNoToken;
      break;
  }
  const std::pair<const char*, int32_t*> keys[] = {
      {"tokenizer.ggml.bos_token_id", &special_.bos},
      {"tokenizer.ggml.eos_token_id", &special_.eos},
      {"tokenizer.ggml.eot_token_id", &special_.eot},
      {"tokenizer.ggml.eom_token_id", &special_.eom},
      {"tokenizer.ggml.unknown_token_id", &special_.unk},
      {"tokenizer.ggml.seperator_token_id", &special_.sep},  // sic: the GGUF key is misspelt
      {"tokenizer.ggml.separator_token_id", &special_.sep},
      {"tokenizer.ggml.padding_token_id", &special_.pad},
      {"tokenizer.ggml.mask_token_id", &special_.mask},
      {"tokenizer.ggml.prefix_token_id", &special_.fim_pre},  // deprecated names
      {"tokenizer.ggml.suffix_token_id", &special_.fim_suf},
      {"tokenizer.ggml.middle_token_id", &special_.fim_mid},
      {"tokenizer.ggml.fim_pre_token_id", &special_.fim_pre},
      {"tokenizer.ggml.fim_suf_token_id", &special_.fim_suf},
      {"tokenizer.ggml.fim_mid_token_id", &special_.fim_mid},
      {"tokenizer.ggml.fim_pad_token_id", &special_.fim_pad},
      {"tokenizer.ggml.fim_rep_token_id", &special_.fim_rep},
      {"tokenizer.ggml.fim_sep_token_id", &special_.fim_sep},
  };
  for (const auto& [key, id] : keys)
    if (auto v = read_id(md, key, n)) *id = *v;
  if (add_bos_ && special_.bos == kNoToken) {
    spdlog::warn("tokenizer: add_bos_token is set but the model has no BOS token; BOS is not added");
    add_bos_ = false;
  }
  if (add_eos_ && special_.eos == kNoToken) {
    spdlog::warn("tokenizer: add_eos_token is set but the model has no EOS token; EOS is not added");
    add_eos_ = false;
  }
}

void Vocab::mark_end_of_generation() {
  // Detects unset eot/eom/fim ids by text (first listed text present wins) and forces control-looking tokens to
  // CONTROL, as llama.cpp does: converters often leave them NORMAL.
  auto force_control = [&](int32_t id) {
    if (tokens_[id].type != TokenType::kControl) {
      spdlog::debug("tokenizer: token {} '{}' looks like a control token; treated as CONTROL", id, tokens_[id].text);
      tokens_[id].type = TokenType::kControl;
    }
  };
  auto detect = [&](int32_t& slot, std::span<const char* const> texts) {
    if (slot != kNoToken) return;
    for (const char* t : texts) {
      if (int32_t id = find(t); id != kNoToken) {
        slot = id;
        force_control(id);
        return;
      }
    }
  };
  static constexpr const char* kEom[] = {"<|eom_id|>"};
  static constexpr const char* kFimPre[] = {"<|fim_prefix|>", "<fim-prefix>", "<PRE>",
                                            "<\xEF\xBD\x9C"
                                            "fim\xE2\x96\x81"
                                            "begin\xEF\xBD\x9C>"};
  static constexpr const char* kFimSuf[] = {"<|fim_suffix|>", "<fim-suffix>", "<SUF>",
                                            "<\xEF\xBD\x9C"
                                            "fim\xE2\x96\x81"
                                            "hole\xEF\xBD\x9C>"};
  static constexpr const char* kFimMid[] = {"<|fim_middle|>", "<fim-middle>", "<MID>",
                                            "<\xEF\xBD\x9C"
                                            "fim\xE2\x96\x81"
                                            "end\xEF\xBD\x9C>"};
  static constexpr const char* kFimPad[] = {"<|fim_pad|>", "<fim-pad>", "<PAD>"};
  static constexpr const char* kFimRep[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>"};
  static constexpr const char* kFimSep[] = {"<|file_sep|>"};
  detect(special_.eot, kEotTexts);
  detect(special_.eom, kEom);
  detect(special_.fim_pre, kFimPre);
  detect(special_.fim_suf, kFimSuf);
  detect(special_.fim_mid, kFimMid);
  detect(special_.fim_pad, kFimPad);
  detect(special_.fim_rep, kFimRep);
  detect(special_.fim_sep, kFimSep);

  eog_ids_.clear();
  for (int32_t id : {special_.eos, special_.eot, special_.eom, special_.fim_pad, special_.fim_rep, special_.fim_sep})
    if (id != kNoToken) eog_ids_.push_back(id);
  for (const char* text : kEogTexts) {
    if (int32_t id = find(text); id != kNoToken) {
      eog_ids_.push_back(id);
      force_control(id);
    }
  }
  // llama.cpp's gemma4 workaround: with "<|tool_response>" in the vocabulary, "</s>" is a plain
  // token, neither end of generation nor special.
  if (const int32_t s = find("</s>"); s != kNoToken && find("<|tool_response>") != kNoToken && s != special_.eos) {
    std::erase(eog_ids_, s);
    tokens_[s].type = TokenType::kNormal;
  }
  std::sort(eog_ids_.begin(), eog_ids_.end());
  eog_ids_.erase(std::unique(eog_ids_.begin(), eog_ids_.end()), eog_ids_.end());
}

void Vocab::apply_strip_attributes(const gguf::Metadata& md) {
  // llama.cpp sets these by model name until GGUF carries per-token attributes.
  const std::string name = lowercase_ascii(md.find_string("general.name").value_or(""));
  const std::string pre = md.find_string(kKeyPre).value_or("");
  auto set_rstrip = [&](std::string_view text, bool value) {
    if (int32_t id = find(text); id != kNoToken) tokens_[id].rstrip = value;
  };
  if (pre == "jina-v2-de" || pre == "jina-v2-es" || pre == "jina-v2-code") {
    if (int32_t id = find("<mask>"); id != kNoToken) tokens_[id].lstrip = true;
  } else if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (auto& t : tokens_)
      if (t.type == TokenType::kControl || t.type == TokenType::kUserDefined || t.type == TokenType::kUnknown)
        t.rstrip = true;
    set_rstrip("</s>", true);
    for (auto text : {"<unk>", "<s>", "<|endoftext|>"}) set_rstrip(text, false);
  }
}

}  // namespace baton::tokenizer
