// UTF-8 decoding/encoding used by the tokenizers (see utf8.h).
#include "engine/tokenizer/utf8.h"

namespace baton::tokenizer {

uint32_t utf8_decode(std::string_view text, size_t pos, size_t& len) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(pos);
  len = 1;
  if (lead < 0x80) return lead;
  size_t n = 0;
  uint32_t cp = 0;
  uint32_t min = 0;
  if (lead >= 0xC2 && lead < 0xE0) {
    n = 2, cp = lead & 0x1F, min = 0x80;
  } else if (lead >= 0xE0 && lead < 0xF0) {
    n = 3, cp = lead & 0x0F, min = 0x800;
  } else if (lead >= 0xF0 && lead < 0xF5) {
    n = 4, cp = lead & 0x07, min = 0x10000;
  } else {
    return kReplacementChar;
  }
  if (pos + n > text.size()) return kReplacementChar;
  for (size_t i = 1; i < n; ++i) {
    const uint8_t c = byte(pos + i);
    if ((c & 0xC0) != 0x80) return kReplacementChar;
    cp = (cp << 6) | (c & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return kReplacementChar;
  len = n;
  return cp;
}

std::vector<uint32_t> utf8_to_codepoints(std::string_view text) {
  std::vector<uint32_t> cps;
  cps.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    size_t len = 0;
    cps.push_back(utf8_decode(text, pos, len));
    pos += len;
  }
  return cps;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp > 0x10FFFF) cp = kReplacementChar;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string utf8_encode(uint32_t cp) {
  std::string s;
  utf8_append(s, cp);
  return s;
}

std::string utf8_sanitize(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    size_t len = 0;
    const uint32_t cp = utf8_decode(text, pos, len);
    if (cp == kReplacementChar && len == 1) {
      utf8_append(out, cp);
    } else {
      out.append(text.substr(pos, len));
    }
    pos += len;
  }
  return out;
}

size_t utf8_complete_prefix(std::string_view bytes) {
  const size_t n = bytes.size();
  // look back at most 3 bytes for the lead byte of a sequence that runs past the end
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const uint8_t c = static_cast<uint8_t>(bytes[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    const size_t need = utf8_seq_len(c);
    return need > back ? n - back : n;
  }
  return n;
}

}  // namespace baton::tokenizer
