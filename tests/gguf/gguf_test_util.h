// Helpers for the GGUF tests: a raw little-endian byte builder (to write headers the writer
// would refuse to produce), a small valid model image made with GgufWriter, and error capture.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace baton::gguf::test {

class ByteBuilder {
 public:
  ByteBuilder& u8(uint8_t v) { return raw(&v, 1); }
  ByteBuilder& u16(uint16_t v) { return raw(&v, 2); }
  ByteBuilder& u32(uint32_t v) { return raw(&v, 4); }
  ByteBuilder& u64(uint64_t v) { return raw(&v, 8); }
  ByteBuilder& str(const std::string& s) {
    u64(s.size());
    return raw(s.data(), s.size());
  }
  // "GGUF", version, tensor count, kv count.
  ByteBuilder& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    raw("GGUF", 4);
    return u32(version).u64(n_tensors).u64(n_kv);
  }
  ByteBuilder& kv_u32(const std::string& key, uint32_t v) { return str(key).u32(4).u32(v); }
  ByteBuilder& kv_str(const std::string& key, const std::string& v) { return str(key).u32(8).str(v); }
  ByteBuilder& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) u64(d);
    return u32(type).u64(offset);
  }
  ByteBuilder& pad_to(size_t alignment) {
    while (bytes_.size() % alignment) bytes_.push_back(0);
    return *this;
  }
  ByteBuilder& zeros(size_t n) {
    bytes_.resize(bytes_.size() + n, 0);
    return *this;
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  ByteBuilder& raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
    return *this;
  }
  std::vector<uint8_t> bytes_;
};

// Metadata with one value of every scalar type and arrays of each element kind.
inline Metadata every_type_metadata() {
  Metadata md;
  md.set_string("general.architecture", "llama");
  md.set("t.u8", Value{ValueType::kUint8, ValueType::kUint32, uint64_t{250}});
  md.set("t.i8", Value{ValueType::kInt8, ValueType::kUint32, int64_t{-100}});
  md.set("t.u16", Value{ValueType::kUint16, ValueType::kUint32, uint64_t{65000}});
  md.set("t.i16", Value{ValueType::kInt16, ValueType::kUint32, int64_t{-32000}});
  md.set_uint32("t.u32", 4000000000u);
  md.set_int32("t.i32", -2000000000);
  md.set_float32("t.f32", 0.1f);
  md.set_bool("t.bool", true);
  md.set_string("t.string", std::string("h\xc3\xa9llo\0world", 12));
  md.set_uint64("t.u64", 0xfedcba9876543210ull);
  md.set("t.i64", Value{ValueType::kInt64, ValueType::kUint32, int64_t{-0x123456789abcdefll}});
  md.set("t.f64", Value{ValueType::kFloat64, ValueType::kUint32, 0.1});
  md.set_string_array("t.arr.string", {"", "a", "<unk>", std::string(300, 'x')});
  md.set_float32_array("t.arr.f32", {0.5, -1.25, 3e-8});
  md.set_int32_array("t.arr.i32", {-1, 0, 2147483647});
  md.set("t.arr.u8", Value{ValueType::kArray, ValueType::kUint8, std::vector<uint64_t>{0, 1, 255}});
  md.set("t.arr.u64", Value{ValueType::kArray, ValueType::kUint64, std::vector<uint64_t>{~0ull, 7}});
  md.set("t.arr.i16", Value{ValueType::kArray, ValueType::kInt16, std::vector<int64_t>{-32768, 32767}});
  md.set("t.arr.f64", Value{ValueType::kArray, ValueType::kFloat64, std::vector<double>{1e300, -0.0}});
  md.set("t.arr.bool", Value{ValueType::kArray, ValueType::kBool, std::vector<bool>{true, false, true}});
  md.set("t.arr.empty", Value{ValueType::kArray, ValueType::kInt32, std::vector<int64_t>{}});
  return md;
}

// Deterministic bytes for tensor payloads.
inline std::vector<uint8_t> pattern_bytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    b = static_cast<uint8_t>(x);
  }
  return v;
}

// A small valid model image (a few KB): every metadata type, an f32, a q8_0 and an f16 tensor.
inline std::vector<uint8_t> small_model_bytes() {
  static const std::vector<uint8_t> image = [] {
    static const auto a = pattern_bytes(64 * 4 * 4, 1);  // f32 [64, 4]
    static const auto b = pattern_bytes(2 * 34 * 3, 2);  // q8_0 [64, 3]
    static const auto c = pattern_bytes(16 * 2, 3);      // f16 [16]
    GgufWriter w(every_type_metadata());
    w.metadata().set_uint32("llama.block_count", 1);
    w.add_tensor("blk.0.attn_q.weight", GgmlType::kF32, {64, 4}, a);
    w.add_tensor("blk.0.ffn_up.weight", GgmlType::kQ8_0, {64, 3}, b);
    w.add_tensor("output_norm.weight", GgmlType::kF16, {16}, c);
    return w.to_bytes();
  }();
  return image;
}

// The FormatError message from_bytes() gives for `bytes`, or "" when they parse. Any other
// exception type fails the test.
inline std::string parse_error(std::span<const uint8_t> bytes) {
  try {
    GgufFile::from_bytes(bytes, "test.gguf");
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

}  // namespace baton::gguf::test
