// Typed metadata accessors: conversions that are lossless succeed, the rest name key and types.
#include <catch2/catch.hpp>

#include "engine/base/error.h"
#include "fixtures.h"
#include "gguf/gguf_file.h"
#include "gguf_test_util.h"

using namespace baton;
using namespace baton::gguf;

TEST_CASE("stories260K metadata reads back with the documented values") {
  auto f = GgufFile::open(baton::test::shared_path("models/stories260K.gguf"));
  const Metadata& md = f->metadata();
  CHECK(f->version() == 3);
  CHECK(f->alignment() == 32);
  CHECK(md.entries().size() == 19);
  CHECK(f->tensors().size() == 48);
  CHECK(md.require_string("general.architecture") == "llama");
  CHECK(md.require_uint("llama.block_count") == 5);
  CHECK(md.require_uint("llama.embedding_length") == 64);
  CHECK(md.require_uint("tokenizer.ggml.padding_token_id") == 0xFFFFFFFFu);
  CHECK(md.require_float("llama.attention.layer_norm_rms_epsilon") == Approx(1e-5));
  const auto& tokens = md.require_string_array("tokenizer.ggml.tokens");
  REQUIRE(tokens.size() == 512);
  CHECK(tokens[0] == "<unk>");
  CHECK(tokens[3] == "<0x00>");
  auto scores = md.find_float_array("tokenizer.ggml.scores");
  REQUIRE(scores);
  CHECK(std::count_if(scores->begin(), scores->end(), [](double s) { return s != 0; }) == 252);
  auto types = md.find_int_array("tokenizer.ggml.token_type");
  REQUIRE(types);
  CHECK((*types)[0] == 2);
  const TensorInfo& ffn_down = f->require_tensor("blk.0.ffn_down.weight");
  CHECK(ffn_down.ne == std::vector<uint64_t>{172, 64});
  CHECK(ffn_down.n_bytes == 172 * 64 * 4);
  CHECK(f->tensor_file_offset(f->tensors()[0]) == 14176);
  CHECK(f->find_tensor("blk.4.ffn_norm.weight") == &f->tensors().back());
  CHECK(f->find_tensor("blk.5.ffn_norm.weight") == nullptr);
}

TEST_CASE("metadata errors of an opened file name the file") {
  auto f = GgufFile::open(baton::test::shared_path("models/stories260K.gguf"));
  CHECK_THROWS_WITH(f->metadata().require_string("llama.block_count"),
                    Catch::StartsWith(f->path() + ": metadata key 'llama.block_count': expected string, found uint32"));
  CHECK_THROWS_WITH(
      f->metadata().require_uint("llama.rope.freq_base"),
      Catch::StartsWith(f->path() + ": metadata key 'llama.rope.freq_base'") && Catch::Contains("missing"));
}

TEST_CASE("metadata accessors name the key and both types on a mismatch") {
  Metadata md = baton::gguf::test::every_type_metadata();
  CHECK(md.require_uint("t.u8") == 250);
  CHECK(md.require_int("t.u32") == 4000000000);
  CHECK(md.require_float("t.i32") == -2000000000.0);
  CHECK(!md.find_uint("absent"));
  CHECK(md.find_string_array("absent") == nullptr);
  CHECK_THROWS_AS(md.require_uint("t.string"), FormatError);
  CHECK_THROWS_WITH(md.require_uint("t.string"),
                    Catch::Contains("'t.string'") && Catch::Contains("unsigned integer") && Catch::Contains("string"));
  CHECK_THROWS_WITH(md.require_uint("t.i8"), Catch::Contains("'t.i8'") && Catch::Contains("-100"));
  CHECK_THROWS_WITH(md.require_int("t.u64"), Catch::Contains("'t.u64'") && Catch::Contains("does not fit"));
  CHECK_THROWS_WITH(md.require_string("t.u32"), Catch::Contains("'t.u32'") && Catch::Contains("uint32"));
  CHECK_THROWS_WITH(md.require_bool("t.arr.bool"), Catch::Contains("array of bool"));
  CHECK_THROWS_WITH(md.require_string_array("t.arr.i32"),
                    Catch::Contains("'t.arr.i32'") && Catch::Contains("array of int32"));
  CHECK_THROWS_WITH(md.require_string("missing.key"), Catch::Contains("'missing.key'") && Catch::Contains("missing"));
  CHECK_THROWS_WITH(md.find_int_array("t.arr.u64"), Catch::Contains("does not fit"));
  CHECK(md.find_float_array("t.arr.i32")->at(2) == 2147483647.0);
}

TEST_CASE("metadata set replaces in place and erase keeps the order of the others") {
  Metadata md;
  md.set_uint32("a", 1);
  md.set_uint32("b", 2);
  md.set_uint32("c", 3);
  md.set_string("a", "x");
  CHECK(md.entries()[0].first == "a");
  CHECK(md.require_string("a") == "x");
  CHECK(md.erase("b"));
  CHECK(!md.erase("b"));
  REQUIRE(md.entries().size() == 2);
  CHECK(md.entries()[1].first == "c");
  CHECK(md.require_uint("c") == 3);
}
