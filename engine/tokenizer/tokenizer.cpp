// Tokenizer: special-token partition, BOS/EOS, per-model encoders, pieces and detokenization,
// following llama.cpp's llama-vocab behaviour.
#include "engine/tokenizer/tokenizer.h"

#include <algorithm>

#include "engine/base/error.h"
#include "engine/tokenizer/bpe.h"
#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/spm.h"
#include "engine/tokenizer/utf8.h"
#include "engine/tokenizer/wpm.h"

namespace baton::tokenizer {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581, SPM's visible space

bool is_c_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out.append(to);
  }
  out.append(s, pos, std::string::npos);
  s.swap(out);
}

// llama.cpp's clean_up_tokenization_spaces passes.
std::string clean_spaces(const std::string& in) {
  std::string a;
  a.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {  // " ?", " !", " .", " ,"
    const char x = in[i];
    if (i > 0 && in[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) a.pop_back();
    a.push_back(x);
  }
  std::string b;
  b.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {  // " ' " -> "'"
    const char x = a[i];
    if (i > 0 && x == '\'' && i + 1 < a.size() && a[i - 1] == ' ' && a[i + 1] == ' ') {
      b.pop_back();
      b.push_back(x);
      a[++i] = '\0';  // drop the following space; it no longer counts as the next one's left
      continue;
    }
    b.push_back(x);
  }
  std::string c;
  c.reserve(b.size());
  for (size_t i = 0; i < b.size(); ++i) {  // " 's" " 'm" " 're" " 've" -> no space
    const char x = b[i];
    if (i > 0 && b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
      const char x1 = b[i + 1];
      const char x2 = i + 2 < b.size() ? b[i + 2] : '\0';
      if (x1 == 's' || x1 == 'm' || (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) c.pop_back();
    }
    c.push_back(x);
  }
  return c;
}

// "<0x0A>" -> "\n"; anything else (a malformed byte token) -> "".
std::string byte_token_value(std::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (text.size() != 6 || !text.starts_with("<0x") || text[5] != '>') return {};
  const int hi = hex(text[3]);
  const int lo = hex(text[4]);
  if (hi < 0 || lo < 0) return {};
  return std::string(1, static_cast<char>(hi * 16 + lo));
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_metadata(const gguf::Metadata& md) {
  return std::unique_ptr<Tokenizer>(new Tokenizer(Vocab::from_metadata(md)));
}

Tokenizer::~Tokenizer() = default;

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {
  switch (vocab_.kind()) {
    case VocabKind::kSpm: encoder_ = std::make_unique<SpmEncoder>(vocab_); break;
    case VocabKind::kBpe: encoder_ = std::make_unique<BpeEncoder>(vocab_); break;
    case VocabKind::kWpm: encoder_ = std::make_unique<WpmEncoder>(vocab_); break;
  }
  const int32_t n = vocab_.n_tokens();
  for (int32_t id = 0; id < n; ++id) {
    const TokenType t = vocab_.type(id);
    if (t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown)
      special_tokens_.push_back(id);
  }
  std::stable_sort(special_tokens_.begin(), special_tokens_.end(),
                   [&](int32_t a, int32_t b) { return vocab_.token(a).text.size() > vocab_.token(b).text.size(); });

  pieces_.resize(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    const TokenData& t = vocab_.token(id);
    std::string& piece = pieces_[static_cast<size_t>(id)];
    switch (t.type) {
      case TokenType::kControl:
      case TokenType::kUnknown:
      case TokenType::kUserDefined: piece = t.text; break;
      case TokenType::kNormal:
        if (vocab_.kind() == VocabKind::kBpe) {
          piece = byte_level_decode(t.text);
        } else {
          piece = t.text;
          replace_all(piece, kSpaceMark, " ");
        }
        break;
      case TokenType::kByte:
        if (vocab_.kind() != VocabKind::kBpe) piece = byte_token_value(t.text);
        break;
      case TokenType::kUnused:
      case TokenType::kUndefined: break;  // rendered as nothing, like llama.cpp
    }
  }
}

void Tokenizer::check_id(int32_t id) const {
  if (!vocab_.valid(id)) fail("token id {} is outside the vocabulary [0, {})", id, vocab_.n_tokens());
}

bool Tokenizer::is_control(int32_t id) const { return vocab_.valid(id) && vocab_.type(id) == TokenType::kControl; }

const std::string& Tokenizer::token_text(int32_t id) const {
  check_id(id);
  return vocab_.token(id).text;
}

std::vector<Tokenizer::Fragment> Tokenizer::partition(std::string_view text, bool parse_special) const {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({kNoToken, 0, text.size()});
  std::vector<Fragment> next;
  for (const int32_t special : special_tokens_) {
    const TokenData& data = vocab_.token(special);
    if (!parse_special && data.type != TokenType::kUserDefined) continue;
    const std::string_view tok = data.text;
    if (text.find(tok) == std::string_view::npos) continue;  // common case: absent
    next.clear();
    for (const Fragment& f : fragments) {
      if (f.token != kNoToken) {
        next.push_back(f);
        continue;
      }
      size_t pos = f.offset;
      const size_t end = f.offset + f.length;
      for (size_t match; (match = text.find(tok, pos)) != std::string_view::npos && match + tok.size() <= end;) {
        size_t left = match - pos;
        if (data.lstrip)
          while (left > 0 && is_c_space(text[pos + left - 1])) --left;
        if (left > 0) next.push_back({kNoToken, pos, left});
        next.push_back({special, match, tok.size()});
        pos = match + tok.size();
        if (data.rstrip)
          while (pos < end && is_c_space(text[pos])) ++pos;
      }
      if (pos < end) next.push_back({kNoToken, pos, end - pos});
    }
    fragments.swap(next);
  }
  return fragments;
}

void Tokenizer::encode_text(std::string_view text, bool prefix_space, std::vector<int32_t>& out) const {
  if (vocab_.kind() != VocabKind::kSpm) {
    encoder_->encode(text, out);
    return;
  }
  std::string escaped;
  escaped.reserve(text.size() + 8);
  if (prefix_space) escaped.append(kSpaceMark);
  for (char c : text) {
    if (c == ' ') {
      escaped.append(kSpaceMark);
    } else {
      escaped.push_back(c);
    }
  }
  encoder_->encode(escaped, out);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  const SpecialTokens& sp = vocab_.special();
  const bool wpm = vocab_.kind() == VocabKind::kWpm;
  if (add_special && (vocab_.add_bos() || wpm) && sp.bos != kNoToken) out.push_back(sp.bos);

  // SPM: a space is prefixed to the text at the start and after every special token
  bool prev_special = true;
  for (const Fragment& f : partition(text, parse_special)) {
    if (f.token != kNoToken) {
      out.push_back(f.token);
      prev_special = true;
    } else {
      encode_text(text.substr(f.offset, f.length), vocab_.add_space_prefix() && prev_special, out);
      prev_special = false;
    }
  }

  if (add_special) {
    if (wpm) {
      if (sp.sep != kNoToken) out.push_back(sp.sep);
    } else if (vocab_.add_eos() && sp.eos != kNoToken) {
      out.push_back(sp.eos);
    }
  }
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool special) const {
  check_id(id);
  const TokenType t = vocab_.type(id);
  if (!special && (t == TokenType::kControl || t == TokenType::kUnknown)) return {};
  return pieces_[static_cast<size_t>(id)];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool special) const {
  std::string text;
  for (const int32_t id : ids) text += token_to_piece(id, special);
  return text;
}

std::string Tokenizer::detokenize(std::span<const int32_t> ids, bool special) const {
  std::string text;
  bool remove_space = vocab_.add_space_prefix();
  for (const int32_t id : ids) {
    std::string piece = token_to_piece(id, special);
    const TokenType t = vocab_.type(id);
    const bool rendered = special || (t != TokenType::kControl && t != TokenType::kUnknown);
    if (remove_space && rendered && !piece.empty() && piece.front() == ' ') piece.erase(0, 1);
    remove_space = false;
    text += piece;
  }
  if (vocab_.clean_spaces()) text = clean_spaces(text);
  return text;
}

std::string StreamDetokenizer::push(int32_t id) {
  pending_ += tokenizer_.token_to_piece(id, special_);
  const size_t n = utf8_complete_prefix(pending_);
  std::string out = pending_.substr(0, n);
  pending_.erase(0, n);
  return out;
}

std::string StreamDetokenizer::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace baton::tokenizer
