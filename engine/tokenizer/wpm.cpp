// BERT normalisation and WordPiece matching (see wpm.h).
#include "engine/tokenizer/wpm.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include "engine/base/error.h"
#include "engine/tokenizer/utf8.h"

namespace baton::tokenizer {
namespace {

constexpr size_t kMaxWordChars = 100;                     // HF WordPiece max_input_chars_per_word
constexpr std::string_view kWordPrefix = "\xE2\x96\x81";  // U+2581

bool is_whitespace(UChar32 c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || u_hasBinaryProperty(c, UCHAR_WHITE_SPACE);
}

bool is_control(UChar32 c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (u_charType(c)) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_UNASSIGNED:
    case U_PRIVATE_USE_CHAR:
    case U_SURROGATE: return true;
    default: return false;
  }
}

bool is_punctuation(UChar32 c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
  return u_ispunct(c);
}

bool is_cjk(UChar32 c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

const icu::Normalizer2& nfd() {
  static const icu::Normalizer2* n = [] {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* p = icu::Normalizer2::getNFDInstance(status);
    if (U_FAILURE(status) || !p) fail("ICU: cannot load the NFD normaliser: {}", u_errorName(status));
    return p;
  }();
  return *n;
}

}  // namespace

std::vector<std::string> WpmEncoder::split_words(std::string_view text) {
  // clean text + isolate CJK, in UTF-16 for ICU
  icu::UnicodeString cleaned;
  for (uint32_t cp : utf8_to_codepoints(text)) {
    const auto c = static_cast<UChar32>(cp);
    if (c == 0 || c == 0xFFFD || is_control(c)) continue;
    if (is_whitespace(c)) {
      cleaned.append(static_cast<UChar>(' '));
    } else if (is_cjk(c)) {
      cleaned.append(static_cast<UChar>(' ')).append(c).append(static_cast<UChar>(' '));
    } else {
      cleaned.append(c);
    }
  }
  UErrorCode status = U_ZERO_ERROR;
  const icu::UnicodeString decomposed = nfd().normalize(cleaned, status);
  if (U_FAILURE(status)) fail("ICU: NFD normalisation failed: {}", u_errorName(status));

  std::vector<std::string> words;
  std::string current;
  auto finish = [&] {
    if (!current.empty()) words.push_back(std::move(current));
    current.clear();
  };
  for (int32_t i = 0; i < decomposed.length(); i = decomposed.moveIndex32(i, 1)) {
    const UChar32 c = decomposed.char32At(i);
    if (u_charType(c) == U_NON_SPACING_MARK) continue;  // strip accents
    if (is_whitespace(c)) {
      finish();
    } else if (is_punctuation(c)) {
      finish();
      utf8_append(current, static_cast<uint32_t>(u_tolower(c)));
      finish();
    } else {
      utf8_append(current, static_cast<uint32_t>(u_tolower(c)));
    }
  }
  finish();
  return words;
}

void WpmEncoder::encode(std::string_view text, std::vector<int32_t>& out) const {
  const size_t max_len = vocab_.max_token_len();
  std::string word;
  for (const std::string& w : split_words(text)) {
    const size_t start = out.size();
    bool ok = utf8_to_codepoints(w).size() <= kMaxWordChars;
    word.assign(kWordPrefix);
    word += w;
    for (size_t i = 0; ok && i < word.size();) {
      // longest vocabulary entry starting at i
      size_t j = std::min(word.size(), i + max_len);
      int32_t id = kNoToken;
      for (; j > i; --j)
        if ((id = vocab_.find(std::string_view(word).substr(i, j - i))) != kNoToken) break;
      if (id == kNoToken) {
        ok = false;
        break;
      }
      out.push_back(id);
      i = j;
    }
    if (!ok) {
      out.resize(start);
      if (vocab_.special().unk != kNoToken) out.push_back(vocab_.special().unk);
    }
  }
}

}  // namespace baton::tokenizer
