// GgufWriter -> GgufFile round trips, and the writer's own refusals.
#include <catch2/catch.hpp>

#include <fstream>

#include "fixtures.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "gguf_test_util.h"

using namespace baton;
using namespace baton::gguf;
using namespace baton::gguf::test;

namespace {
void require_same_metadata(const Metadata& a, const Metadata& b) {
  REQUIRE(a.entries().size() == b.entries().size());
  for (size_t i = 0; i < a.entries().size(); ++i) {
    const auto& [ka, va] = a.entries()[i];
    const auto& [kb, vb] = b.entries()[i];
    INFO(ka);
    CHECK(ka == kb);
    CHECK(va.type == vb.type);
    if (va.is_array()) CHECK(va.element_type == vb.element_type);
    CHECK(va.data == vb.data);
  }
}
}  // namespace

TEST_CASE("writer round trip reproduces metadata of every type in insertion order") {
  const Metadata md = every_type_metadata();
  GgufWriter w(md);
  auto f = GgufFile::from_bytes(w.to_bytes());
  CHECK(f->version() == 3);
  CHECK(f->tensors().empty());
  // float32 values are stored as the double of the float, so they compare exactly.
  require_same_metadata(md, f->metadata());
  CHECK(f->metadata().require_string("t.string") == std::string("h\xc3\xa9llo\0world", 12));
  CHECK(f->metadata().require_int("t.i64") == -0x123456789abcdefll);
  CHECK(f->metadata().require_uint("t.u64") == 0xfedcba9876543210ull);
  CHECK(f->metadata().require_float("t.f32") == static_cast<double>(0.1f));
  CHECK(f->metadata().require_string_array("t.arr.string")[3] == std::string(300, 'x'));
}

TEST_CASE("writer round trip through a file keeps tensor types, shapes and bytes exactly") {
  const auto f32 = pattern_bytes(64 * 3 * 2 * 4, 7);
  const auto q4k = pattern_bytes(144 * 2, 8);  // q4_K [512]: 2 blocks of 144 bytes
  const auto i8 = pattern_bytes(5, 9);         // odd size: the next tensor needs padding
  const auto bf16 = pattern_bytes(2 * 33, 10);
  Metadata md;
  md.set_string("general.architecture", "llama");
  md.set_uint32("general.alignment", 64);
  GgufWriter w(md);
  w.add_tensor("a", GgmlType::kF32, {64, 3, 2}, f32);
  w.add_tensor("b", GgmlType::kQ4_K, {512}, q4k);
  w.add_tensor("c", GgmlType::kI8, {5}, i8);
  w.add_tensor("d", GgmlType::kBF16, {33, 1, 1, 1}, bf16);
  w.add_tensor("scalar", GgmlType::kF32, {}, std::span<const uint8_t>(f32.data(), 4));
  const std::string path = baton::test::temp_dir() + "/rt.gguf";
  w.write(path);

  auto f = GgufFile::open(path);
  CHECK(f->alignment() == 64);
  REQUIRE(f->tensors().size() == 5);
  const std::vector<std::pair<std::string, const std::vector<uint8_t>*>> expect = {
      {"a", &f32}, {"b", &q4k}, {"c", &i8}, {"d", &bf16}};
  for (const auto& [name, bytes] : expect) {
    INFO(name);
    const TensorInfo& t = f->require_tensor(name);
    CHECK(f->tensor_file_offset(t) % 64 == 0);
    auto d = f->tensor_data(t);
    REQUIRE(d.size() == bytes->size());
    CHECK(std::equal(d.begin(), d.end(), bytes->begin()));
  }
  CHECK(f->require_tensor("a").ne == std::vector<uint64_t>{64, 3, 2});
  CHECK(f->require_tensor("a").n_rows() == 6);
  CHECK(f->require_tensor("a").row_bytes() == 256);
  CHECK(f->require_tensor("b").type == GgmlType::kQ4_K);
  CHECK(f->require_tensor("b").row_bytes() == 288);
  CHECK(f->require_tensor("d").ne == std::vector<uint64_t>{33, 1, 1, 1});
  CHECK(f->require_tensor("scalar").ne.empty());
  CHECK(f->require_tensor("scalar").n_elements() == 1);
  CHECK_THROWS_WITH(f->require_tensor("nope"), Catch::Contains("'nope'") && Catch::Contains("not found"));

  // Re-writing what was read gives the identical file.
  GgufWriter again(f->metadata());
  for (const auto& t : f->tensors()) again.add_tensor(t.name, t.type, t.ne, f->tensor_data(t));
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> original((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(again.to_bytes() == original);
}

TEST_CASE("writer refuses tensors whose bytes do not match their shape") {
  GgufWriter w(Metadata{});
  const auto bytes = pattern_bytes(100, 1);
  CHECK_THROWS_WITH(w.add_tensor("x", GgmlType::kF32, {24}, bytes),
                    Catch::Contains("'x'") && Catch::Contains("needs 96 bytes, got 100"));
  CHECK_THROWS_WITH(w.add_tensor("q", GgmlType::kQ8_0, {40}, bytes),
                    Catch::Contains("'q'") && Catch::Contains("not a multiple of the block size 32"));
  CHECK_THROWS_WITH(w.add_tensor("d", GgmlType::kF32, {1, 1, 1, 1, 25}, bytes), Catch::Contains("5 dimensions"));
  w.add_tensor("ok", GgmlType::kF32, {25}, bytes);
  CHECK_THROWS_WITH(w.add_tensor("ok", GgmlType::kF32, {25}, bytes), Catch::Contains("duplicate tensor name 'ok'"));
}

TEST_CASE("writer refuses a metadata value that does not fit its declared type") {
  Metadata md;
  md.set("k", Value{ValueType::kUint8, ValueType::kUint32, uint64_t{300}});
  CHECK_THROWS_WITH(GgufWriter(md).to_bytes(), Catch::Contains("'k'") && Catch::Contains("300"));
  Metadata md2;
  md2.set("s", Value{ValueType::kString, ValueType::kUint32, uint64_t{1}});
  CHECK_THROWS_WITH(GgufWriter(md2).to_bytes(), Catch::Contains("'s'") && Catch::Contains("string"));
  Metadata md3;
  md3.set_uint32("general.alignment", 48);
  CHECK_THROWS_WITH(GgufWriter{md3}, Catch::Contains("48") && Catch::Contains("power of two"));
}
