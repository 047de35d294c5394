// Parsing and validation of one GGUF file image (header, metadata, tensor table). A pure
// function over bytes: no I/O, no tensor data read. Internal to gguf/; GgufFile is the public API.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_metadata.h"

namespace baton::gguf {

inline constexpr uint64_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS

struct GgufHeader {
  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  Metadata metadata;
  std::vector<TensorInfo> tensors;  // file order; part = 0
  uint64_t data_offset = 0;         // byte offset of the data section in the file
};

// Parses `file` (the whole file image) and validates every size and offset against its length:
// GGUF v2/v3 only, alignment a power of two, known tensor types, rows made of whole blocks,
// offsets aligned, tensors inside the file, no duplicate names, no overlap. Throws
// FormatError "<source>: <problem> (at byte N)" or naming the key/tensor.
GgufHeader parse_gguf_header(std::span<const uint8_t> file, std::string_view source);

}  // namespace baton::gguf
