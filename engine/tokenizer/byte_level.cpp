// GPT-2 byte-level mapping (see byte_level.h).
#include "engine/tokenizer/byte_level.h"

#include <array>
#include <unordered_map>

#include "engine/tokenizer/utf8.h"

namespace baton::tokenizer {
namespace {

struct Tables {
  std::array<std::string, 256> to_unicode;
  std::unordered_map<uint32_t, uint8_t> to_byte;
  Tables() {
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cp = printable(b) ? static_cast<uint32_t>(b) : next++;
      to_unicode[b] = utf8_encode(cp);
      to_byte[cp] = static_cast<uint8_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t byte) { return tables().to_unicode[byte]; }

void byte_level_encode(std::string_view raw, std::string& out) {
  const auto& t = tables();
  for (char c : raw) out += t.to_unicode[static_cast<uint8_t>(c)];
}

std::string byte_level_decode(std::string_view text) {
  const auto& t = tables();
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    size_t len = 0;
    const uint32_t cp = utf8_decode(text, pos, len);
    auto it = t.to_byte.find(cp);
    if (it != t.to_byte.end()) {
      out.push_back(static_cast<char>(it->second));
    } else {
      out.append(text.substr(pos, len));
    }
    pos += len;
  }
  return out;
}

}  // namespace baton::tokenizer
