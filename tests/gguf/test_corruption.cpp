// Malformed and hostile GGUF images: each is refused with a FormatError naming the problem,
// never a crash, a hang or a giant allocation.
#include <catch2/catch.hpp>

#include "gguf_test_util.h"

using namespace baton;
using namespace baton::gguf;
using namespace baton::gguf::test;

TEST_CASE("the small test model image is valid") {
  const auto image = small_model_bytes();
  CHECK(image.size() > 1000);
  CHECK(image.size() < 8192);
  auto f = GgufFile::from_bytes(image);
  CHECK(f->tensors().size() == 3);
  CHECK(f->metadata().entries().size() == 23);
}

TEST_CASE("truncation at every byte offset is refused") {
  const auto image = small_model_bytes();
  for (size_t n = 0; n < image.size(); ++n) {
    INFO("truncated to " << n << " bytes");
    const std::string msg = parse_error(std::span(image.data(), n));
    REQUIRE(!msg.empty());
    REQUIRE_THAT(msg, Catch::Contains("test.gguf"));
  }
}

TEST_CASE("flipping any header byte is refused cleanly or still parses") {
  const auto image = small_model_bytes();
  auto f = GgufFile::from_bytes(image);
  const uint64_t header_end = f->tensor_file_offset(f->tensors().front());
  size_t refused = 0;
  for (size_t i = 0; i < header_end; ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      auto bad = image;
      bad[i] ^= mask;
      if (!parse_error(bad).empty()) ++refused;  // any other exception type fails the test
    }
  }
  CHECK(refused > header_end);  // most flips break something
}

TEST_CASE("bad magic, v1, big-endian and unknown versions are refused with the reason") {
  CHECK_THAT(parse_error({}), Catch::Contains("only 0 bytes"));
  ByteBuilder notgguf;
  notgguf.u32(0x464c457f).zeros(20);
  CHECK_THAT(parse_error(notgguf.bytes()), Catch::Contains("not a GGUF file") && Catch::Contains("\\x7fELF"));
  CHECK_THAT(parse_error(ByteBuilder().header(0, 0, 1).bytes()), Catch::Contains("GGUF v1 is not supported"));
  CHECK_THAT(parse_error(ByteBuilder().header(0, 0, 0x03000000).bytes()), Catch::Contains("big-endian"));
  CHECK_THAT(parse_error(ByteBuilder().header(0, 0, 4).bytes()), Catch::Contains("unsupported GGUF version 4"));
  CHECK(parse_error(ByteBuilder().header(0, 0, 2).bytes()).empty());
  CHECK(parse_error(ByteBuilder().header(0, 0, 3).bytes()).empty());
}

TEST_CASE("absurd counts and lengths are refused before allocating") {
  CHECK_THAT(parse_error(ByteBuilder().header(1ull << 60, 0).bytes()),
             Catch::Contains("tensor count 1152921504606846976 cannot fit"));
  CHECK_THAT(parse_error(ByteBuilder().header(0, 1ull << 60).bytes()),
             Catch::Contains("key/value count 1152921504606846976 cannot fit"));
  CHECK_THAT(parse_error(ByteBuilder().header(0, 1).u64(1ull << 63).zeros(64).bytes()),
             Catch::Contains("key of metadata entry #0 has length 9223372036854775808"));
  CHECK_THAT(parse_error(ByteBuilder().header(0, 1).str("k").u32(8).u64(~0ull).bytes()),
             Catch::Contains("metadata key 'k'") && Catch::Contains("has length 18446744073709551615"));
  CHECK_THAT(parse_error(ByteBuilder().header(0, 1).str("arr").u32(9).u32(8).u64(1ull << 60).zeros(64).bytes()),
             Catch::Contains("'arr'") && Catch::Contains("array of 1152921504606846976 string elements cannot fit"));
  CHECK_THAT(parse_error(ByteBuilder().header(0, 1).str("arr").u32(9).u32(0).u64(~0ull).bytes()),
             Catch::Contains("'arr'") && Catch::Contains("cannot fit"));
  CHECK_THAT(parse_error(ByteBuilder().header(1, 0).u64(1ull << 63).zeros(64).bytes()),
             Catch::Contains("name of tensor #0 has length"));
}

TEST_CASE("malformed metadata values are refused naming the key") {
  CHECK_THAT(parse_error(ByteBuilder().header(0, 1).str("k").u32(13).u32(0).bytes()),
             Catch::Contains("'k'") && Catch::Contains("unknown value type 13"));
  CHECK_THAT(parse_error(ByteBuilder().header(0, 1).str("k").u32(9).u32(9).u64(1).u32(4).u64(0).bytes()),
             Catch::Contains("'k'") && Catch::Contains("arrays of arrays"));
  CHECK_THAT(parse_error(ByteBuilder().header(0, 1).str("k").u32(9).u32(77).u64(0).bytes()),
             Catch::Contains("'k'") && Catch::Contains("unknown array element type 77"));
  CHECK_THAT(parse_error(ByteBuilder().header(0, 2).kv_u32("dup", 1).kv_u32("dup", 2).bytes()),
             Catch::Contains("duplicate metadata key 'dup'"));
}

TEST_CASE("bad general.alignment values are refused") {
  for (uint32_t a : {0u, 3u, 48u, 0x80000001u}) {
    INFO(a);
    CHECK_THAT(parse_error(ByteBuilder().header(0, 1).kv_u32("general.alignment", a).bytes()),
               Catch::Contains("general.alignment = " + std::to_string(a)) && Catch::Contains("power of two"));
  }
  CHECK_THAT(parse_error(ByteBuilder().header(0, 1).kv_str("general.alignment", "32").bytes()),
             Catch::Contains("'general.alignment' must be a positive integer"));
  CHECK(parse_error(ByteBuilder().header(0, 1).kv_u32("general.alignment", 1u << 31).bytes()).empty());
}

namespace {
// One tensor "t" with the given shape/type/offset and `data` bytes after the 32-aligned header.
std::vector<uint8_t> one_tensor(std::vector<uint64_t> ne, uint32_t type, uint64_t offset, size_t data) {
  ByteBuilder b;
  b.header(1, 0).tensor("t", std::move(ne), type, offset).pad_to(32).zeros(data);
  return b.bytes();
}
}  // namespace

TEST_CASE("bad tensor records are refused naming the tensor") {
  CHECK(parse_error(one_tensor({8, 2}, 0, 0, 64)).empty());
  CHECK_THAT(parse_error(one_tensor({8, 2}, 0, 0, 63)),
             Catch::Contains("tensor 't' (64 bytes at data offset 0) extends past the end"));
  CHECK_THAT(parse_error(one_tensor({8, 2}, 0, ~0ull - 31, 64)),
             Catch::Contains("'t'") && Catch::Contains("extends past"));
  CHECK_THAT(parse_error(one_tensor({8, 2}, 99, 0, 64)), Catch::Contains("tensor 't' has unknown ggml type id 99"));
  CHECK_THAT(parse_error(one_tensor({8, 2}, 4, 0, 64)), Catch::Contains("unknown ggml type id 4"));
  CHECK_THAT(parse_error(one_tensor({8, 2}, 0, 16, 96)),
             Catch::Contains("tensor 't' offset 16 is not a multiple of the alignment 32"));
  CHECK_THAT(parse_error(one_tensor({1, 1, 1, 1, 1}, 0, 0, 64)), Catch::Contains("'t' has 5 dimensions"));
  CHECK_THAT(parse_error(one_tensor({1ull << 32, 1ull << 32, 1ull << 32}, 0, 0, 64)),
             Catch::Contains("'t'") && Catch::Contains("overflows"));
  CHECK_THAT(parse_error(one_tensor({1ull << 62}, 0, 0, 64)), Catch::Contains("'t'") && Catch::Contains("overflows"));
  CHECK_THAT(parse_error(one_tensor({~0ull}, 0, 0, 64)), Catch::Contains("'t' has a negative dimension"));
  CHECK_THAT(parse_error(one_tensor({48}, 8, 0, 64)),
             Catch::Contains("tensor 't' of type q8_0 has 48 elements per row, not a multiple of the block size 32"));
  CHECK_THAT(parse_error(one_tensor({4096}, 12, 0, 64)), Catch::Contains("'t'") && Catch::Contains("extends past"));
}

TEST_CASE("overlapping and duplicate tensors are refused") {
  ByteBuilder overlap;
  overlap.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {16}, 0, 32).pad_to(32).zeros(128);
  CHECK_THAT(parse_error(overlap.bytes()),
             Catch::Contains("'a'") && Catch::Contains("'b'") && Catch::Contains("overlap"));
  ByteBuilder same;
  same.header(2, 0).tensor("a", {8}, 0, 0).tensor("b", {8}, 0, 0).pad_to(32).zeros(64);
  CHECK_THAT(parse_error(same.bytes()), Catch::Contains("overlap"));
  ByteBuilder dup;
  dup.header(2, 0).tensor("a", {8}, 0, 0).tensor("a", {8}, 0, 32).pad_to(32).zeros(64);
  CHECK_THAT(parse_error(dup.bytes()), Catch::Contains("duplicate tensor name 'a'"));
  ByteBuilder adjacent;  // back to back, in reverse file order: fine
  adjacent.header(2, 0).tensor("a", {8}, 0, 32).tensor("b", {8}, 0, 0).pad_to(32).zeros(64);
  CHECK(parse_error(adjacent.bytes()).empty());
  ByteBuilder empty_inside;  // a zero-element tensor occupies no bytes
  empty_inside.header(2, 0).tensor("a", {16}, 0, 0).tensor("e", {0, 4}, 0, 32).pad_to(32).zeros(64);
  CHECK(parse_error(empty_inside.bytes()).empty());
}

TEST_CASE("a data section that starts past the end of the file is refused") {
  ByteBuilder b;
  b.header(1, 0).tensor("t", {0}, 0, 0);  // no padding: the aligned data start is past EOF
  CHECK_THAT(parse_error(b.bytes()), Catch::Contains("data section starts at byte"));
}
