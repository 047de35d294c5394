// Metadata storage and typed accessors. Conversions are lossless or refused: an accessor never
// silently truncates (a uint64 above INT64_MAX is not an int, a negative int is not a uint).
#include "gguf/gguf_metadata.h"

#include <limits>
#include <type_traits>

#include "engine/base/error.h"

namespace baton::gguf {
namespace {

bool is_unsigned(ValueType t) {
  return t == ValueType::kUint8 || t == ValueType::kUint16 || t == ValueType::kUint32 || t == ValueType::kUint64;
}
bool is_signed(ValueType t) {
  return t == ValueType::kInt8 || t == ValueType::kInt16 || t == ValueType::kInt32 || t == ValueType::kInt64;
}
bool is_float(ValueType t) { return t == ValueType::kFloat32 || t == ValueType::kFloat64; }

std::string describe(const Value& v) {
  if (!v.is_array()) return std::string(value_type_name(v.type));
  return fmt::format("array of {} ({} elements)", value_type_name(v.element_type), v.array_size());
}

}  // namespace

std::string_view value_type_name(ValueType t) {
  switch (t) {
    case ValueType::kUint8: return "uint8";
    case ValueType::kInt8: return "int8";
    case ValueType::kUint16: return "uint16";
    case ValueType::kInt16: return "int16";
    case ValueType::kUint32: return "uint32";
    case ValueType::kInt32: return "int32";
    case ValueType::kFloat32: return "float32";
    case ValueType::kBool: return "bool";
    case ValueType::kString: return "string";
    case ValueType::kArray: return "array";
    case ValueType::kUint64: return "uint64";
    case ValueType::kInt64: return "int64";
    case ValueType::kFloat64: return "float64";
  }
  return "unknown";
}

size_t Value::array_size() const {
  if (!is_array()) return 0;
  return std::visit(
      [](const auto& d) -> size_t {
        using D = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<D, std::vector<uint64_t>> || std::is_same_v<D, std::vector<int64_t>> ||
                      std::is_same_v<D, std::vector<double>> || std::is_same_v<D, std::vector<bool>> ||
                      std::is_same_v<D, std::vector<std::string>>)
          return d.size();
        else return 0;
      },
      data);
}

void Metadata::set(std::string key, Value value) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    entries_[it->second].second = std::move(value);
    return;
  }
  index_.emplace(key, entries_.size());
  entries_.emplace_back(std::move(key), std::move(value));
}

bool Metadata::erase(std::string_view key) {
  auto it = index_.find(key);
  if (it == index_.end()) return false;
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(it->second));
  index_.clear();
  for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].first, i);
  return true;
}

const Value* Metadata::find(std::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

namespace {
std::string prefix(const std::string& source) { return source.empty() ? std::string() : source + ": "; }
}  // namespace

[[noreturn]] static void md_fail(const std::string& source, const std::string& message) {
  throw FormatError(prefix(source) + message);
}

[[noreturn]] static void type_mismatch(const std::string& source, std::string_view key, std::string_view expected,
                                       const Value& v) {
  fail<FormatError>("{}metadata key '{}': expected {}, found {}", prefix(source), key, expected, describe(v));
}

std::optional<uint64_t> Metadata::find_uint(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (is_unsigned(v->type)) return std::get<uint64_t>(v->data);
  if (is_signed(v->type)) {
    int64_t i = std::get<int64_t>(v->data);
    if (i < 0)
      md_fail(source_, fmt::format("metadata key '{}': expected a non-negative integer, found {} ({})", key, i,
                                   value_type_name(v->type)));
    return static_cast<uint64_t>(i);
  }
  type_mismatch(source_, key, "an unsigned integer", *v);
}

std::optional<int64_t> Metadata::find_int(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (is_signed(v->type)) return std::get<int64_t>(v->data);
  if (is_unsigned(v->type)) {
    uint64_t u = std::get<uint64_t>(v->data);
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      md_fail(source_, fmt::format("metadata key '{}': value {} does not fit a signed 64-bit integer", key, u));
    return static_cast<int64_t>(u);
  }
  type_mismatch(source_, key, "an integer", *v);
}

std::optional<double> Metadata::find_float(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (is_float(v->type)) return std::get<double>(v->data);
  if (is_unsigned(v->type)) return static_cast<double>(std::get<uint64_t>(v->data));
  if (is_signed(v->type)) return static_cast<double>(std::get<int64_t>(v->data));
  type_mismatch(source_, key, "a number", *v);
}

std::optional<bool> Metadata::find_bool(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (v->type == ValueType::kBool) return std::get<bool>(v->data);
  type_mismatch(source_, key, "bool", *v);
}

std::optional<std::string> Metadata::find_string(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (v->type == ValueType::kString) return std::get<std::string>(v->data);
  type_mismatch(source_, key, "string", *v);
}

const std::vector<std::string>* Metadata::find_string_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return nullptr;
  if (v->is_array() && v->element_type == ValueType::kString) return &std::get<std::vector<std::string>>(v->data);
  type_mismatch(source_, key, "array of string", *v);
}

std::optional<std::vector<double>> Metadata::find_float_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_array()) {
    if (is_float(v->element_type)) return std::get<std::vector<double>>(v->data);
    if (is_unsigned(v->element_type)) {
      const auto& src = std::get<std::vector<uint64_t>>(v->data);
      return std::vector<double>(src.begin(), src.end());
    }
    if (is_signed(v->element_type)) {
      const auto& src = std::get<std::vector<int64_t>>(v->data);
      return std::vector<double>(src.begin(), src.end());
    }
  }
  type_mismatch(source_, key, "array of numbers", *v);
}

std::optional<std::vector<int64_t>> Metadata::find_int_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_array()) {
    if (is_signed(v->element_type)) return std::get<std::vector<int64_t>>(v->data);
    if (is_unsigned(v->element_type)) {
      const auto& src = std::get<std::vector<uint64_t>>(v->data);
      std::vector<int64_t> out;
      out.reserve(src.size());
      for (size_t i = 0; i < src.size(); ++i) {
        if (src[i] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          md_fail(source_, fmt::format("metadata key '{}': element {} = {} does not fit a signed 64-bit integer", key,
                                       i, src[i]));
        out.push_back(static_cast<int64_t>(src[i]));
      }
      return out;
    }
  }
  type_mismatch(source_, key, "array of integers", *v);
}

[[noreturn]] static void missing(const std::string& source, std::string_view key, std::string_view expected) {
  fail<FormatError>("{}metadata key '{}' ({}) is missing", prefix(source), key, expected);
}

uint64_t Metadata::require_uint(std::string_view key) const {
  if (auto v = find_uint(key)) return *v;
  missing(source_, key, "unsigned integer");
}
int64_t Metadata::require_int(std::string_view key) const {
  if (auto v = find_int(key)) return *v;
  missing(source_, key, "integer");
}
double Metadata::require_float(std::string_view key) const {
  if (auto v = find_float(key)) return *v;
  missing(source_, key, "number");
}
bool Metadata::require_bool(std::string_view key) const {
  if (auto v = find_bool(key)) return *v;
  missing(source_, key, "bool");
}
std::string Metadata::require_string(std::string_view key) const {
  if (auto v = find_string(key)) return *v;
  missing(source_, key, "string");
}
const std::vector<std::string>& Metadata::require_string_array(std::string_view key) const {
  if (const auto* v = find_string_array(key)) return *v;
  missing(source_, key, "array of string");
}

void Metadata::set_uint32(std::string key, uint32_t v) {
  set(std::move(key), Value{ValueType::kUint32, ValueType::kUint32, uint64_t{v}});
}
void Metadata::set_uint64(std::string key, uint64_t v) {
  set(std::move(key), Value{ValueType::kUint64, ValueType::kUint32, v});
}
void Metadata::set_int32(std::string key, int32_t v) {
  set(std::move(key), Value{ValueType::kInt32, ValueType::kUint32, int64_t{v}});
}
void Metadata::set_float32(std::string key, float v) {
  set(std::move(key), Value{ValueType::kFloat32, ValueType::kUint32, double{v}});
}
void Metadata::set_bool(std::string key, bool v) {
  set(std::move(key), Value{ValueType::kBool, ValueType::kUint32, v});
}
void Metadata::set_string(std::string key, std::string v) {
  set(std::move(key), Value{ValueType::kString, ValueType::kUint32, std::move(v)});
}
void Metadata::set_string_array(std::string key, std::vector<std::string> v) {
  set(std::move(key), Value{ValueType::kArray, ValueType::kString, std::move(v)});
}
void Metadata::set_float32_array(std::string key, std::vector<double> v) {
  for (double& x : v) x = static_cast<double>(static_cast<float>(x));  // what the file will hold
  set(std::move(key), Value{ValueType::kArray, ValueType::kFloat32, std::move(v)});
}
void Metadata::set_int32_array(std::string key, std::vector<int64_t> v) {
  set(std::move(key), Value{ValueType::kArray, ValueType::kInt32, std::move(v)});
}

}  // namespace baton::gguf
