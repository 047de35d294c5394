// GGUF v3 writer. Metadata is written in insertion order with each value's own type; tensors
// in the order added, each at the next multiple of the alignment (general.alignment, else 32).
// Tensor bytes are not copied: add_tensor() keeps a span (it may point into another file's
// mapping) that must stay valid until write() returns, so writing streams from the sources.
// Tensors produced one at a time (the quantizer) are declared with declare_tensor() and
// streamed: write_header(), then write_data() for each tensor in order.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "engine/base/ggml_type.h"
#include "gguf/gguf_metadata.h"

namespace baton::gguf {

class GgufWriter {
 public:
  // Throws FormatError when general.alignment is present but not a non-zero power of two.
  explicit GgufWriter(Metadata metadata);

  Metadata& metadata() { return metadata_; }
  // general.alignment if present, else 32. Throws FormatError if it is not a power of two.
  uint64_t alignment() const;

  // Throws Error when the name repeats, there are more than 4 dimensions, ne[0] is not a
  // multiple of the type's block size, or data.size() differs from the size the shape implies.
  void add_tensor(std::string name, GgmlType type, std::vector<uint64_t> ne, std::span<const uint8_t> data);
  // A tensor whose bytes come later through write_data(); the same checks on the shape.
  void declare_tensor(std::string name, GgmlType type, std::vector<uint64_t> ne);
  size_t n_tensors() const { return tensors_.size(); }

  // Streaming: the header, every tensor's info and the padding up to the data section...
  void write_header(std::ostream& out) const;
  // ...then tensor `index`'s bytes (preceded by its alignment padding); call for index 0, 1, ...
  // in order. Throws Error naming the tensor if `data` is not the size its shape implies.
  void write_data(std::ostream& out, size_t index, std::span<const uint8_t> data) const;

  // Writes the file to `path` (through `path`.tmp and a rename). Throws Error on I/O failure,
  // or when a metadata value's payload does not match its declared type or range.
  void write(const std::string& path) const;
  // Writes the same bytes to a stream.
  void write(std::ostream& out) const;
  // The whole file image in memory (tests, fuzz seeds).
  std::vector<uint8_t> to_bytes() const;

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> ne;
    uint64_t bytes = 0;             // what the shape implies
    std::span<const uint8_t> data;  // empty for a declared tensor
    bool declared = false;
  };
  // Checks name, rank and block multiple; returns the size the shape implies.
  uint64_t check_tensor(const std::string& name, GgmlType type, const std::vector<uint64_t>& ne) const;
  uint64_t offset_of(size_t index) const;  // in the data section
  Metadata metadata_;
  std::vector<Tensor> tensors_;
};

// GGUF encoding of one metadata value (type payload only, not the type tag): used by the
// writer and by the model identity hash. Throws Error naming `key` on a malformed Value.
void encode_value(std::string& out, const Value& v, std::string_view key);

}  // namespace baton::gguf
