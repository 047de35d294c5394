#include "gguf/gguf_header.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <unordered_set>

#include "engine/base/checked_math.h"
#include "engine/base/error.h"
#include "gguf/byte_cursor.h"

namespace baton::gguf {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32

// Bytes one array element occupies at least (strings: their uint64 length).
uint64_t min_element_bytes(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kBool: return 1;
    case ValueType::kUint16:
    case ValueType::kInt16: return 2;
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kFloat32: return 4;
    case ValueType::kUint64:
    case ValueType::kInt64:
    case ValueType::kFloat64:
    case ValueType::kString: return 8;
    case ValueType::kArray: return 0;
  }
  return 0;
}

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::kFloat64); }

// One scalar of type t, widened into the Value representation.
template <class Push>
void read_scalar(ByteCursor& c, ValueType t, const std::string& what, Push&& push) {
  switch (t) {
    case ValueType::kUint8: push(uint64_t{c.u8(what)}); break;
    case ValueType::kUint16: push(uint64_t{c.u16(what)}); break;
    case ValueType::kUint32: push(uint64_t{c.u32(what)}); break;
    case ValueType::kUint64: push(c.u64(what)); break;
    case ValueType::kInt8: push(int64_t{c.i8(what)}); break;
    case ValueType::kInt16: push(int64_t{c.i16(what)}); break;
    case ValueType::kInt32: push(int64_t{c.i32(what)}); break;
    case ValueType::kInt64: push(c.i64(what)); break;
    case ValueType::kFloat32: push(double{c.f32(what)}); break;
    case ValueType::kFloat64: push(c.f64(what)); break;
    case ValueType::kBool: push(c.u8(what) != 0); break;
    case ValueType::kString: push(c.string(what)); break;
    case ValueType::kArray: break;  // handled by the caller
  }
}

template <class T>
std::vector<T> read_array_of(ByteCursor& c, ValueType elem, uint64_t count, const std::string& what) {
  std::vector<T> out;
  out.reserve(static_cast<size_t>(count));  // count was bounded by the remaining bytes
  for (uint64_t i = 0; i < count; ++i)
    read_scalar(c, elem, what, [&](auto v) {
      if constexpr (std::is_convertible_v<decltype(v), T>) out.push_back(static_cast<T>(std::move(v)));
    });
  return out;
}

Value read_value(ByteCursor& c, ValueType type, const std::string& key) {
  const std::string what = "value of metadata key '" + key + "'";
  Value v;
  v.type = type;
  if (type != ValueType::kArray) {
    read_scalar(c, type, what, [&](auto x) { v.data = std::move(x); });
    return v;
  }
  const uint64_t at = c.offset();
  const uint32_t elem_raw = c.u32("array element type of metadata key '" + key + "'");
  if (!valid_value_type(elem_raw)) c.fail_at(at, "metadata key '{}': unknown array element type {}", key, elem_raw);
  const auto elem = static_cast<ValueType>(elem_raw);
  if (elem == ValueType::kArray) c.fail_at(at, "metadata key '{}': arrays of arrays are not supported", key);
  const uint64_t count = c.u64("array length of metadata key '" + key + "'");
  if (count > c.remaining() / min_element_bytes(elem))
    c.fail_at(at, "metadata key '{}': array of {} {} elements cannot fit in the {} remaining bytes", key, count,
              value_type_name(elem), c.remaining());
  v.element_type = elem;
  const std::string ewhat = "element of array '" + key + "'";
  switch (elem) {
    case ValueType::kUint8:
    case ValueType::kUint16:
    case ValueType::kUint32:
    case ValueType::kUint64: v.data = read_array_of<uint64_t>(c, elem, count, ewhat); break;
    case ValueType::kInt8:
    case ValueType::kInt16:
    case ValueType::kInt32:
    case ValueType::kInt64: v.data = read_array_of<int64_t>(c, elem, count, ewhat); break;
    case ValueType::kFloat32:
    case ValueType::kFloat64: v.data = read_array_of<double>(c, elem, count, ewhat); break;
    case ValueType::kBool: v.data = read_array_of<bool>(c, elem, count, ewhat); break;
    case ValueType::kString: v.data = read_array_of<std::string>(c, elem, count, ewhat); break;
    case ValueType::kArray: break;
  }
  return v;
}

uint64_t read_alignment(const Metadata& md, std::string_view source) {
  const Value* a = md.find("general.alignment");
  if (!a) return kDefaultAlignment;
  uint64_t value = 0;
  if (const auto* u = std::get_if<uint64_t>(&a->data); u && !a->is_array()) {
    value = *u;
  } else if (const auto* i = std::get_if<int64_t>(&a->data); i && !a->is_array() && *i > 0) {
    value = static_cast<uint64_t>(*i);
  } else {
    fail<FormatError>("{}: metadata key 'general.alignment' must be a positive integer, found {}", source,
                      value_type_name(a->type));
  }
  if (value == 0 || !std::has_single_bit(value))
    fail<FormatError>("{}: general.alignment = {} is not a non-zero power of two", source, value);
  return value;
}

TensorInfo read_tensor_info(ByteCursor& c, uint64_t index) {
  const uint64_t at = c.offset();
  TensorInfo t;
  t.name = c.string(fmt::format("name of tensor #{}", index));
  const uint32_t n_dims = c.u32(fmt::format("n_dims of tensor '{}'", t.name));
  if (n_dims > kMaxDims)
    c.fail_at(at, "tensor '{}' has {} dimensions (at most {} are supported)", t.name, n_dims, kMaxDims);
  t.ne.resize(n_dims);
  for (uint32_t d = 0; d < n_dims; ++d) {
    t.ne[d] = c.u64(fmt::format("ne[{}] of tensor '{}'", d, t.name));
    if (t.ne[d] > static_cast<uint64_t>(INT64_MAX))
      c.fail_at(at, "tensor '{}' has a negative dimension ne[{}] = {}", t.name, d, static_cast<int64_t>(t.ne[d]));
  }
  const uint32_t type_id = c.u32(fmt::format("type of tensor '{}'", t.name));
  const auto type = find_ggml_type(type_id);
  if (!type) c.fail_at(at, "tensor '{}' has unknown ggml type id {}", t.name, type_id);
  t.type = type->type;
  t.offset = c.u64(fmt::format("offset of tensor '{}'", t.name));

  uint64_t n = 1;
  for (uint64_t d : t.ne) {
    auto p = checked_mul(n, d);
    if (!p) c.fail_at(at, "tensor '{}': element count overflows 64 bits", t.name);
    n = *p;
  }
  if (t.row_length() % type->block_size != 0)
    c.fail_at(at, "tensor '{}' of type {} has {} elements per row, not a multiple of the block size {}", t.name,
              type->name, t.row_length(), type->block_size);
  auto bytes = checked_mul(n / type->block_size, type->block_bytes);
  if (!bytes) c.fail_at(at, "tensor '{}': byte size overflows 64 bits", t.name);
  t.n_bytes = *bytes;
  return t;
}

void validate_placement(std::vector<TensorInfo>& tensors, uint64_t alignment, uint64_t data_offset, uint64_t file_size,
                        std::string_view source) {
  if (!tensors.empty() && data_offset > file_size)
    fail<FormatError>("{}: tensor data section starts at byte {}, past the end of the {}-byte file", source,
                      data_offset, file_size);
  const uint64_t data_size = data_offset <= file_size ? file_size - data_offset : 0;
  std::unordered_set<std::string_view> names;
  for (const auto& t : tensors) {
    if (!names.insert(t.name).second) fail<FormatError>("{}: duplicate tensor name '{}'", source, t.name);
    if (t.offset % alignment != 0)
      fail<FormatError>("{}: tensor '{}' offset {} is not a multiple of the alignment {}", source, t.name, t.offset,
                        alignment);
    auto end = checked_add(t.offset, t.n_bytes);
    if (!end || *end > data_size)
      fail<FormatError>(
          "{}: tensor '{}' ({} bytes at data offset {}) extends past the end of the file "
          "(data section holds {} bytes)",
          source, t.name, t.n_bytes, t.offset, data_size);
  }
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tensors[a].offset < tensors[b].offset; });
  const TensorInfo* prev = nullptr;
  for (size_t i : order) {
    const TensorInfo& t = tensors[i];
    if (t.n_bytes == 0) continue;
    if (prev && prev->offset + prev->n_bytes > t.offset)
      fail<FormatError>("{}: tensors '{}' (bytes {}..{}) and '{}' (bytes {}..{}) overlap", source, prev->name,
                        prev->offset, prev->offset + prev->n_bytes, t.name, t.offset, t.offset + t.n_bytes);
    prev = &t;
  }
}

}  // namespace

uint64_t TensorInfo::n_elements() const {
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;  // validated against overflow when parsed
  return n;
}

uint64_t TensorInfo::n_rows() const {
  const uint64_t r = row_length();
  return r == 0 ? 0 : n_elements() / r;
}

uint64_t TensorInfo::row_bytes() const {
  const auto& info = require_ggml_type(type);
  return row_length() / info.block_size * info.block_bytes;
}

GgufHeader parse_gguf_header(std::span<const uint8_t> file, std::string_view source) {
  ByteCursor c(file, source);
  GgufHeader h;
  h.metadata.set_source_name(std::string(source));
  if (file.size() < 4) c.fail_at(0, "not a GGUF file: only {} bytes long", file.size());
  const uint32_t magic = c.u32("magic");
  if (magic != kMagic) {
    std::string shown;
    for (size_t i = 0; i < 4; ++i) {
      const char ch = static_cast<char>(file[i]);
      shown += (ch >= 0x20 && ch < 0x7f) ? std::string(1, ch) : fmt::format("\\x{:02x}", file[i]);
    }
    c.fail_at(0, "not a GGUF file: magic is '{}', expected 'GGUF'", shown);
  }
  h.version = c.u32("version");
  if (h.version == 1)
    c.fail_at(4,
              "GGUF v1 is not supported (32-bit counts); re-convert the model with a current llama.cpp "
              "convert script");
  if (h.version != 2 && h.version != 3) {
    const uint32_t swapped = __builtin_bswap32(h.version);
    if (swapped >= 1 && swapped <= 3)
      c.fail_at(4, "big-endian GGUF (version {} byte-swapped) is not supported", swapped);
    c.fail_at(4, "unsupported GGUF version {} (supported: 2 and 3)", h.version);
  }
  const uint64_t n_tensors = c.u64("tensor count");
  const uint64_t n_kv = c.u64("metadata key/value count");
  // Each tensor record takes at least 24 bytes, each key/value at least 13.
  if (n_tensors > c.remaining() / 24)
    c.fail_at(8, "tensor count {} cannot fit in the {} remaining bytes", n_tensors, c.remaining());
  if (n_kv > c.remaining() / 13)
    c.fail_at(16, "metadata key/value count {} cannot fit in the {} remaining bytes", n_kv, c.remaining());

  for (uint64_t i = 0; i < n_kv; ++i) {
    const uint64_t at = c.offset();
    std::string key = c.string(fmt::format("key of metadata entry #{}", i));
    const uint32_t type = c.u32("value type of metadata key '" + key + "'");
    if (!valid_value_type(type)) c.fail_at(at, "metadata key '{}' has unknown value type {}", key, type);
    if (h.metadata.contains(key)) c.fail_at(at, "duplicate metadata key '{}'", key);
    Value v = read_value(c, static_cast<ValueType>(type), key);
    h.metadata.set(std::move(key), std::move(v));
  }
  h.alignment = read_alignment(h.metadata, source);

  h.tensors.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) h.tensors.push_back(read_tensor_info(c, i));

  auto data_offset = checked_align_up(c.offset(), h.alignment);
  if (!data_offset) c.fail_at(c.offset(), "data section offset overflows with alignment {}", h.alignment);
  h.data_offset = *data_offset;
  validate_placement(h.tensors, h.alignment, h.data_offset, file.size(), source);
  return h;
}

}  // namespace baton::gguf
