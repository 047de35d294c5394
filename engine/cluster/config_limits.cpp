#include "engine/cluster/config_limits.h"

#include <fmt/format.h>

#include <cmath>

namespace baton {
namespace {

// The length of the valid UTF-8 sequence at text[i], or 0 (overlong forms, surrogates and
// code points beyond U+10FFFF are invalid).
size_t utf8_sequence(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3f);
  }
  static constexpr uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinimum[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  if (cp >= 0x80 && cp < 0xa0) return 0;  // C1 controls
  return n;
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size() && out.size() < 80; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') out += static_cast<char>(c);
    else out += fmt::format("\\x{:02x}", c);
  }
  if (out.size() >= 80) out += "...";
  return out;
}

std::string seconds_problem(std::string_view field, double seconds, SecondsRange range) {
  if (std::isfinite(seconds) && seconds >= range.min && seconds <= range.max) return "";
  return fmt::format("{} must be a number of seconds from {} to {}, found {}", field, range.min, range.max, seconds);
}

std::string name_problem(std::string_view field, std::string_view text, size_t max_bytes, bool allow_space) {
  if (text.empty()) return fmt::format("{} must not be empty", field);
  if (text.size() > max_bytes)
    return fmt::format("{} is {} bytes long, more than the {} allowed ('{}')", field, text.size(), max_bytes,
                       printable(text));
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f || (c == ' ' && !allow_space))
      return fmt::format("{} has a space or control character (byte {} is 0x{:02x}): '{}'", field, i, c,
                         printable(text));
    const size_t n = utf8_sequence(text, i);
    if (n == 0) return fmt::format("{} is not valid UTF-8 (at byte {}): '{}'", field, i, printable(text));
    i += n;
  }
  return "";
}

}  // namespace baton
