// Small UTF-8 helpers shared by the tokenizers: code point length from a lead byte, decoding
// with U+FFFD for malformed input, encoding, and the length of a complete-UTF-8 prefix.
// Pure functions, no allocation beyond their results; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace baton::tokenizer {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Bytes a sequence starting with `lead` claims (1 for ASCII, continuation or invalid bytes).
inline size_t utf8_seq_len(uint8_t lead) {
  if (lead < 0xC0) return 1;  // ASCII, or a stray continuation byte
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  if (lead < 0xF8) return 4;
  return 1;
}

// Decodes the code point at text[pos]; sets `len` to the bytes consumed (>= 1). A malformed or
// truncated sequence yields U+FFFD and consumes one byte.
uint32_t utf8_decode(std::string_view text, size_t pos, size_t& len);

// All code points of `text` (malformed bytes become U+FFFD).
std::vector<uint32_t> utf8_to_codepoints(std::string_view text);

// Appends the UTF-8 encoding of `cp` (values above U+10FFFF become U+FFFD).
void utf8_append(std::string& out, uint32_t cp);
std::string utf8_encode(uint32_t cp);

// `text` with every malformed sequence replaced by U+FFFD (a copy when it is already valid).
std::string utf8_sanitize(std::string_view text);

// Length of the longest prefix of `bytes` that does not end inside an incomplete multi-byte
// sequence: only a truncated sequence at the very end is held back (at most 3 bytes).
size_t utf8_complete_prefix(std::string_view bytes);

}  // namespace baton::tokenizer
