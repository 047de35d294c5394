// GPT-2's reversible byte <-> Unicode mapping used by byte-level BPE vocabularies: printable
// bytes map to themselves, the other 68 to U+0100.. in byte order (space -> U+0120 'Ġ').
// Tables are built once; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace baton::tokenizer {

// The UTF-8 text of the code point that stands for `byte`.
const std::string& byte_to_unicode(uint8_t byte);
// Appends the byte-level encoding of every byte of `raw`.
void byte_level_encode(std::string_view raw, std::string& out);
// Decodes a byte-level token text back to raw bytes. A code point outside the mapping is kept
// as its UTF-8 text (llama.cpp writes an "[UNK_BYTE_...]" marker instead).
std::string byte_level_decode(std::string_view text);

}  // namespace baton::tokenizer
