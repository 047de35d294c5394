// A bounded little-endian reader over an untrusted byte span. Every read checks the remaining
// length first; a failure throws baton::FormatError naming the source, what was being read and
// the byte offset. It never allocates more than the bytes that remain in the span.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "engine/base/error.h"

namespace baton::gguf {

class ByteCursor {
 public:
  ByteCursor(std::span<const uint8_t> bytes, std::string_view source) : bytes_(bytes), source_(source) {}

  uint64_t offset() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }
  std::string_view source() const { return source_; }

  // Throws FormatError "<source>: <message> (at byte <offset>)".
  template <class... Args>
  [[noreturn]] void fail_at(uint64_t offset, fmt::format_string<Args...> format, Args&&... args) const {
    throw FormatError(
        fmt::format("{}: {} (at byte {})", source_, fmt::format(format, std::forward<Args>(args)...), offset));
  }

  void require(uint64_t n, std::string_view what) const {
    if (n > remaining()) fail_at(pos_, "truncated: {} needs {} bytes, only {} remain", what, n, remaining());
  }

  uint8_t u8(std::string_view what) { return scalar<uint8_t>(what); }
  uint16_t u16(std::string_view what) { return scalar<uint16_t>(what); }
  uint32_t u32(std::string_view what) { return scalar<uint32_t>(what); }
  uint64_t u64(std::string_view what) { return scalar<uint64_t>(what); }
  int8_t i8(std::string_view what) { return scalar<int8_t>(what); }
  int16_t i16(std::string_view what) { return scalar<int16_t>(what); }
  int32_t i32(std::string_view what) { return scalar<int32_t>(what); }
  int64_t i64(std::string_view what) { return scalar<int64_t>(what); }
  float f32(std::string_view what) { return scalar<float>(what); }
  double f64(std::string_view what) { return scalar<double>(what); }

  // A GGUF string: uint64 length then that many bytes (no terminator). The length is checked
  // against the remaining bytes before anything is allocated.
  std::string string(std::string_view what) {
    const uint64_t at = pos_;
    const uint64_t n = u64(what);
    if (n > remaining()) fail_at(at, "{} has length {} but only {} bytes remain in the file", what, n, remaining());
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(n));
    pos_ += n;
    return s;
  }

  std::span<const uint8_t> bytes(uint64_t n, std::string_view what) {
    require(n, what);
    auto s = bytes_.subspan(static_cast<size_t>(pos_), static_cast<size_t>(n));
    pos_ += n;
    return s;
  }

 private:
  template <class T>
  T scalar(std::string_view what) {
    require(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));  // the format and our hosts are little-endian
    pos_ += sizeof(T);
    return v;
  }

  std::span<const uint8_t> bytes_;
  std::string_view source_;
  uint64_t pos_ = 0;
};

}  // namespace baton::gguf
