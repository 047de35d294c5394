// GGUF metadata: typed key/value pairs, including arrays (of scalars or strings).
// find_* returns nullopt/nullptr when the key is absent and throws FormatError when it is
// present with an incompatible type; require_* also throws when it is absent. Messages name
// the key, the expected and the actual type.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace baton::gguf {

enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
std::string_view value_type_name(ValueType t);

// One metadata value. Integers are held widened (uint64/int64), floats as double; the original
// type is kept so a writer can reproduce the file exactly.
struct Value {
  ValueType type = ValueType::kUint32;
  ValueType element_type = ValueType::kUint32;  // arrays only
  std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<uint64_t>, std::vector<int64_t>,
               std::vector<double>, std::vector<bool>, std::vector<std::string>>
      data;

  bool is_array() const { return type == ValueType::kArray; }
  size_t array_size() const;  // 0 for scalars
};

class Metadata {
 public:
  void set(std::string key, Value value);  // replaces
  bool erase(std::string_view key);
  const Value* find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  // Keys in file order.
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }

  // Where the metadata came from (a file path); when set, accessor errors start with it.
  void set_source_name(std::string source) { source_ = std::move(source); }
  const std::string& source_name() const { return source_; }

  // Any integer type (signed values must be >= 0 for find_uint).
  std::optional<uint64_t> find_uint(std::string_view key) const;
  std::optional<int64_t> find_int(std::string_view key) const;
  std::optional<double> find_float(std::string_view key) const;  // float32/64 (and integers)
  std::optional<bool> find_bool(std::string_view key) const;
  std::optional<std::string> find_string(std::string_view key) const;
  const std::vector<std::string>* find_string_array(std::string_view key) const;
  std::optional<std::vector<double>> find_float_array(std::string_view key) const;
  std::optional<std::vector<int64_t>> find_int_array(std::string_view key) const;

  uint64_t require_uint(std::string_view key) const;
  int64_t require_int(std::string_view key) const;
  double require_float(std::string_view key) const;
  bool require_bool(std::string_view key) const;
  std::string require_string(std::string_view key) const;
  const std::vector<std::string>& require_string_array(std::string_view key) const;

  // Convenience setters for writers and tools.
  void set_uint32(std::string key, uint32_t v);
  void set_uint64(std::string key, uint64_t v);
  void set_int32(std::string key, int32_t v);
  void set_float32(std::string key, float v);
  void set_bool(std::string key, bool v);
  void set_string(std::string key, std::string v);
  void set_string_array(std::string key, std::vector<std::string> v);
  void set_float32_array(std::string key, std::vector<double> v);  // rounds each element to float
  void set_int32_array(std::string key, std::vector<int64_t> v);

 private:
  std::vector<std::pair<std::string, Value>> entries_;
  std::map<std::string, size_t, std::less<>> index_;
  std::string source_;
};

}  // namespace baton::gguf
