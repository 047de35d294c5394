#include "gguf/gguf_writer.h"

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "engine/base/checked_math.h"
#include "engine/base/error.h"
#include "gguf/gguf_header.h"

namespace baton::gguf {
namespace {

template <class T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts only
  out.append(b, sizeof(T));
}

void put_string(std::string& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.append(s);
}

template <class T>
T narrow_unsigned(uint64_t v, std::string_view key) {
  if (v > std::numeric_limits<T>::max())
    fail<Error>("metadata key '{}': value {} does not fit its declared type", key, v);
  return static_cast<T>(v);
}

template <class T>
T narrow_signed(int64_t v, std::string_view key) {
  if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max())
    fail<Error>("metadata key '{}': value {} does not fit its declared type", key, v);
  return static_cast<T>(v);
}

void encode_scalar_u(std::string& out, ValueType t, uint64_t v, std::string_view key) {
  switch (t) {
    case ValueType::kUint8: put(out, narrow_unsigned<uint8_t>(v, key)); break;
    case ValueType::kUint16: put(out, narrow_unsigned<uint16_t>(v, key)); break;
    case ValueType::kUint32: put(out, narrow_unsigned<uint32_t>(v, key)); break;
    default: put(out, v); break;
  }
}

void encode_scalar_i(std::string& out, ValueType t, int64_t v, std::string_view key) {
  switch (t) {
    case ValueType::kInt8: put(out, narrow_signed<int8_t>(v, key)); break;
    case ValueType::kInt16: put(out, narrow_signed<int16_t>(v, key)); break;
    case ValueType::kInt32: put(out, narrow_signed<int32_t>(v, key)); break;
    default: put(out, v); break;
  }
}

void encode_scalar_f(std::string& out, ValueType t, double v) {
  if (t == ValueType::kFloat32) put(out, static_cast<float>(v));
  else put(out, v);
}

enum class Kind { kUnsigned, kSigned, kFloat, kBool, kString, kOther };
Kind kind_of(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
    case ValueType::kUint16:
    case ValueType::kUint32:
    case ValueType::kUint64: return Kind::kUnsigned;
    case ValueType::kInt8:
    case ValueType::kInt16:
    case ValueType::kInt32:
    case ValueType::kInt64: return Kind::kSigned;
    case ValueType::kFloat32:
    case ValueType::kFloat64: return Kind::kFloat;
    case ValueType::kBool: return Kind::kBool;
    case ValueType::kString: return Kind::kString;
    case ValueType::kArray: return Kind::kOther;
  }
  return Kind::kOther;
}

template <class T>
const T& payload(const Value& v, std::string_view key) {
  const T* p = std::get_if<T>(&v.data);
  if (!p) fail<Error>("metadata key '{}': payload does not match its declared type {}", key, value_type_name(v.type));
  return *p;
}

}  // namespace

void encode_value(std::string& out, const Value& v, std::string_view key) {
  if (!v.is_array()) {
    switch (kind_of(v.type)) {
      case Kind::kUnsigned: encode_scalar_u(out, v.type, payload<uint64_t>(v, key), key); return;
      case Kind::kSigned: encode_scalar_i(out, v.type, payload<int64_t>(v, key), key); return;
      case Kind::kFloat: encode_scalar_f(out, v.type, payload<double>(v, key)); return;
      case Kind::kBool: put<uint8_t>(out, payload<bool>(v, key) ? 1 : 0); return;
      case Kind::kString: put_string(out, payload<std::string>(v, key)); return;
      case Kind::kOther: break;
    }
    fail<Error>("metadata key '{}': invalid value type {}", key, static_cast<uint32_t>(v.type));
  }
  put<uint32_t>(out, static_cast<uint32_t>(v.element_type));
  switch (kind_of(v.element_type)) {
    case Kind::kUnsigned: {
      const auto& a = payload<std::vector<uint64_t>>(v, key);
      put<uint64_t>(out, a.size());
      for (uint64_t x : a) encode_scalar_u(out, v.element_type, x, key);
      return;
    }
    case Kind::kSigned: {
      const auto& a = payload<std::vector<int64_t>>(v, key);
      put<uint64_t>(out, a.size());
      for (int64_t x : a) encode_scalar_i(out, v.element_type, x, key);
      return;
    }
    case Kind::kFloat: {
      const auto& a = payload<std::vector<double>>(v, key);
      put<uint64_t>(out, a.size());
      for (double x : a) encode_scalar_f(out, v.element_type, x);
      return;
    }
    case Kind::kBool: {
      const auto& a = payload<std::vector<bool>>(v, key);
      put<uint64_t>(out, a.size());
      for (bool x : a) put<uint8_t>(out, x ? 1 : 0);
      return;
    }
    case Kind::kString: {
      const auto& a = payload<std::vector<std::string>>(v, key);
      put<uint64_t>(out, a.size());
      for (const auto& s : a) put_string(out, s);
      return;
    }
    case Kind::kOther: break;
  }
  fail<Error>("metadata key '{}': unsupported array element type {}", key, static_cast<uint32_t>(v.element_type));
}

GgufWriter::GgufWriter(Metadata metadata) : metadata_(std::move(metadata)) { (void)alignment(); }

uint64_t GgufWriter::alignment() const {
  const Value* a = metadata_.find("general.alignment");
  if (!a) return kDefaultAlignment;
  const uint64_t v = metadata_.require_uint("general.alignment");
  if (v == 0 || !std::has_single_bit(v)) fail<FormatError>("general.alignment = {} is not a non-zero power of two", v);
  return v;
}

uint64_t GgufWriter::check_tensor(const std::string& name, GgmlType type, const std::vector<uint64_t>& ne) const {
  for (const auto& t : tensors_)
    if (t.name == name) fail<Error>("GGUF writer: duplicate tensor name '{}'", name);
  if (ne.size() > kMaxDims)
    fail<Error>("GGUF writer: tensor '{}' has {} dimensions (max {})", name, ne.size(), kMaxDims);
  const auto& info = require_ggml_type(type);
  TensorInfo probe;
  probe.type = type;
  probe.ne = ne;
  uint64_t n = 1;
  for (uint64_t d : ne) {
    auto p = checked_mul(n, d);
    if (!p) fail<Error>("GGUF writer: tensor '{}' element count overflows", name);
    n = *p;
  }
  if (probe.row_length() % info.block_size != 0)
    fail<Error>("GGUF writer: tensor '{}' of type {} has {} elements per row, not a multiple of the block size {}",
                name, info.name, probe.row_length(), info.block_size);
  return n / info.block_size * info.block_bytes;
}

void GgufWriter::add_tensor(std::string name, GgmlType type, std::vector<uint64_t> ne, std::span<const uint8_t> data) {
  const uint64_t bytes = check_tensor(name, type, ne);
  if (bytes != data.size())
    fail<Error>("GGUF writer: tensor '{}' of type {} and shape needs {} bytes, got {}", name,
                require_ggml_type(type).name, bytes, data.size());
  tensors_.push_back(Tensor{std::move(name), type, std::move(ne), bytes, data, false});
}

void GgufWriter::declare_tensor(std::string name, GgmlType type, std::vector<uint64_t> ne) {
  const uint64_t bytes = check_tensor(name, type, ne);
  tensors_.push_back(Tensor{std::move(name), type, std::move(ne), bytes, {}, true});
}

uint64_t GgufWriter::offset_of(size_t index) const {
  const uint64_t align = alignment();
  uint64_t offset = 0;
  for (size_t i = 0;; ++i) {
    offset = (offset + align - 1) / align * align;
    if (i == index) return offset;
    offset += tensors_[i].bytes;
  }
}

void GgufWriter::write_header(std::ostream& out) const {
  const uint64_t align = alignment();
  std::string h;
  put<uint32_t>(h, 0x46554747);  // "GGUF"
  put<uint32_t>(h, 3);
  put<uint64_t>(h, tensors_.size());
  put<uint64_t>(h, metadata_.entries().size());
  for (const auto& [key, value] : metadata_.entries()) {
    put_string(h, key);
    put<uint32_t>(h, static_cast<uint32_t>(value.type));
    encode_value(h, value, key);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    put_string(h, t.name);
    put<uint32_t>(h, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t d : t.ne) put<uint64_t>(h, d);
    put<uint32_t>(h, static_cast<uint32_t>(t.type));
    offset = (offset + align - 1) / align * align;
    put<uint64_t>(h, offset);
    offset += t.bytes;
  }
  h.resize((h.size() + align - 1) / align * align, '\0');
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  if (!out) fail<Error>("GGUF writer: write failed");
}

void GgufWriter::write_data(std::ostream& out, size_t index, std::span<const uint8_t> data) const {
  if (index >= tensors_.size())
    fail<Error>("GGUF writer: tensor #{} written, only {} declared", index, tensors_.size());
  const Tensor& t = tensors_[index];
  if (data.size() != t.bytes)
    fail<Error>("GGUF writer: tensor '{}' needs {} bytes, got {}", t.name, t.bytes, data.size());
  const uint64_t end_of_previous = index == 0 ? 0 : offset_of(index - 1) + tensors_[index - 1].bytes;
  const std::string zeros(static_cast<size_t>(offset_of(index) - end_of_previous), '\0');
  out.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  if (!out) fail<Error>("GGUF writer: writing tensor '{}' failed", t.name);
}

void GgufWriter::write(std::ostream& out) const {
  for (const auto& t : tensors_)
    if (t.declared)
      fail<Error>("GGUF writer: tensor '{}' was declared without data; stream it with write_data()", t.name);
  write_header(out);
  for (size_t i = 0; i < tensors_.size(); ++i) write_data(out, i, tensors_[i].data);
}

void GgufWriter::write(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail<Error>("{}: cannot create file", tmp);
    try {
      write(out);
      out.flush();
      if (!out) fail<Error>("{}: write failed (disk full?)", tmp);
    } catch (...) {
      out.close();
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) fail<Error>("{}: cannot rename {} into place: {}", path, tmp, ec.message());
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::ostringstream s(std::ios::binary);
  write(s);
  const std::string str = s.str();
  return std::vector<uint8_t>(str.begin(), str.end());
}

}  // namespace baton::gguf
