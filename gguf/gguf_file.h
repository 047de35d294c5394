// A GGUF model file (v2/v3, little-endian), memory-mapped read-only: metadata, tensor table
// and zero-copy views of tensor data. A split model (name-00001-of-0000N.gguf) opens as one
// model from its first part. Every size and offset is validated against the file before use;
// any violation throws baton::FormatError naming the file, the offset or key, and the problem.
// Thread-safety: const methods may be called concurrently once open() returned.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/ggml_type.h"
#include "gguf/gguf_metadata.h"

namespace baton::gguf {

struct TensorInfo {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<uint64_t> ne;  // ggml order: ne[0] is the innermost (row) length
  uint64_t offset = 0;       // from the start of its part's data section
  uint64_t n_bytes = 0;      // validated: ne product / block_size * block_bytes
  uint32_t part = 0;         // which file of a split model holds it

  uint64_t n_elements() const;
  uint64_t row_length() const { return ne.empty() ? 1 : ne[0]; }
  uint64_t n_rows() const;     // n_elements / row_length
  uint64_t row_bytes() const;  // bytes of one row of ne[0] elements
};

class GgufFile {
 public:
  // Opens and validates `path` (and, for a split model, all its parts). Throws FormatError.
  static std::shared_ptr<const GgufFile> open(const std::string& path);
  // Parses an in-memory image (tests, fuzzing); the bytes are copied. Split keys are not
  // followed: the image is one part. prefetch()/release() do nothing on such a file.
  static std::shared_ptr<const GgufFile> from_bytes(std::span<const uint8_t> bytes, std::string name = "<memory>");

  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint32_t n_parts() const;
  uint64_t total_file_bytes() const;  // sum over parts

  const Metadata& metadata() const { return metadata_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  const TensorInfo& require_tensor(std::string_view name) const;  // throws naming it

  // Zero-copy view into the mapping; valid while the GgufFile lives.
  std::span<const uint8_t> tensor_data(const TensorInfo& t) const;
  // Absolute byte offset of the tensor's data in its part's file (data section start + offset).
  uint64_t tensor_file_offset(const TensorInfo& t) const;
  // Size in bytes of one part's file.
  uint64_t part_file_bytes(uint32_t part) const;
  // Asks the kernel to read these tensors' pages ahead (madvise WILLNEED); touches nothing else.
  void prefetch(const TensorInfo& t) const;
  // Tells the kernel the pages may be dropped (madvise DONTNEED); used when a range is released.
  void release(const TensorInfo& t) const;

  struct Part;  // one mapped file (defined in the .cpp)

 private:
  GgufFile() = default;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  Metadata metadata_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;  // name -> index in tensors_
  std::vector<std::unique_ptr<Part>> parts_;
  friend class GgufParser;
};

}  // namespace baton::gguf
