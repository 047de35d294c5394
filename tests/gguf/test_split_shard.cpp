// Split models (name-0000K-of-0000N.gguf), layer shards and the model identity.
#include <catch2/catch.hpp>

#include <filesystem>

#include "fixtures.h"
#include "gguf/model_identity.h"
#include "gguf/shard.h"
#include "gguf_test_util.h"

using namespace baton;
using namespace baton::gguf;
using namespace baton::gguf::test;
namespace fs = std::filesystem;

namespace {

struct SplitFixture {
  std::string dir = baton::test::temp_dir();
  std::vector<std::vector<uint8_t>> payloads;
  std::string part(int i) const { return fmt::format("{}/model-{:05}-of-00003.gguf", dir, i + 1); }

  // 3 parts holding 2, 1 and 2 tensors; part 0 carries the model metadata.
  explicit SplitFixture(int32_t declared_tensors = 5) {
    for (int i = 0; i < 5; ++i) payloads.push_back(pattern_bytes(64 * 4, 100 + i));
    const int owner[5] = {0, 0, 1, 2, 2};
    for (int p = 0; p < 3; ++p) {
      Metadata md;
      if (p == 0) {
        md.set_string("general.architecture", "llama");
        md.set_uint32("llama.block_count", 5);
      }
      md.set("split.no", Value{ValueType::kUint16, ValueType::kUint32, uint64_t(p)});
      md.set("split.count", Value{ValueType::kUint16, ValueType::kUint32, uint64_t{3}});
      md.set_int32("split.tensors.count", declared_tensors);
      GgufWriter w(md);
      for (int t = 0; t < 5; ++t)
        if (owner[t] == p) w.add_tensor(fmt::format("blk.{}.w", t), GgmlType::kF32, {64}, payloads[t]);
      w.write(part(p));
    }
  }
};

}  // namespace

TEST_CASE("opening the first part of a split model opens and merges all parts") {
  SplitFixture s;
  auto f = GgufFile::open(s.part(0));
  CHECK(f->n_parts() == 3);
  REQUIRE(f->tensors().size() == 5);
  const uint32_t expect_part[5] = {0, 0, 1, 2, 2};
  for (int t = 0; t < 5; ++t) {
    const TensorInfo& info = f->require_tensor(fmt::format("blk.{}.w", t));
    CHECK(info.part == expect_part[t]);
    auto d = f->tensor_data(info);
    CHECK(std::equal(d.begin(), d.end(), s.payloads[t].begin(), s.payloads[t].end()));
  }
  CHECK(f->metadata().require_uint("llama.block_count") == 5);
  CHECK(f->total_file_bytes() == fs::file_size(s.part(0)) + fs::file_size(s.part(1)) + fs::file_size(s.part(2)));
}

TEST_CASE("a split model with a missing part is refused naming the missing file") {
  SplitFixture s;
  fs::remove(s.part(1));
  CHECK_THROWS_WITH(GgufFile::open(s.part(0)),
                    Catch::Contains("part 2 of 3 is missing") && Catch::Contains("model-00002-of-00003.gguf"));
}

TEST_CASE("opening a later part of a split model points at the first part") {
  SplitFixture s;
  CHECK_THROWS_WITH(GgufFile::open(s.part(1)),
                    Catch::Contains("part 2 of 3") && Catch::Contains("model-00001-of-00003.gguf"));
}

TEST_CASE("a split model whose tensor count disagrees with split.tensors.count is refused") {
  SplitFixture s(6);
  CHECK_THROWS_WITH(GgufFile::open(s.part(0)),
                    Catch::Contains("split.tensors.count = 6") && Catch::Contains("hold 5 tensors"));
}

TEST_CASE("a shard holds exactly the requested layers and keeps the source identity") {
  auto src = GgufFile::open(baton::test::shared_path("models/stories260K.gguf"));
  const std::string dir = baton::test::temp_dir();
  const std::string source_identity = model_identity(*src);
  CHECK(source_identity.size() == 32);

  ShardOptions mid{1, 2, false, false};
  CHECK(write_shard(*src, mid, dir + "/mid.gguf") == 18);
  auto shard = GgufFile::open(dir + "/mid.gguf");
  std::vector<std::string> names;
  for (const auto& t : shard->tensors()) names.push_back(t.name);
  std::vector<std::string> expect;
  for (int l = 1; l <= 2; ++l)
    for (const char* n :
         {"attn_q", "attn_k", "attn_v", "attn_output", "attn_norm", "ffn_gate", "ffn_down", "ffn_up", "ffn_norm"})
      expect.push_back(fmt::format("blk.{}.{}.weight", l, n));
  std::sort(names.begin(), names.end());
  std::sort(expect.begin(), expect.end());
  CHECK(names == expect);
  for (const auto& t : shard->tensors()) {
    auto a = shard->tensor_data(t);
    auto b = src->tensor_data(src->require_tensor(t.name));
    CHECK(std::equal(a.begin(), a.end(), b.begin(), b.end()));
  }
  CHECK(model_identity(*shard) == source_identity);
  CHECK(compute_model_identity(shard->metadata(), shard->tensors()) != source_identity);
  CHECK(shard->metadata().require_string("baton.shard.source_name") == "stories260K.gguf");
  CHECK(shard->metadata().require_string_array("tokenizer.ggml.tokens").size() == 512);

  HeldLayers held = held_layers(*shard);
  CHECK(held.is_shard);
  CHECK(held.n_layer == 5);
  CHECK(held.first == 1);
  CHECK(held.last == 2);
  CHECK_NOTHROW(require_layers(*shard, 1, 2));
  CHECK_NOTHROW(require_layers(*shard, 2, 2));
  CHECK_THROWS_WITH(require_layers(*shard, 2, 3),
                    Catch::Contains("holds layers 1-2, asked for 2-3") && Catch::Contains("mid.gguf"));
  CHECK_THROWS_WITH(require_layers(*src, 3, 5), Catch::Contains("has 5 layers (0-4), asked for 3-5"));
  CHECK(!held_layers(*src).is_shard);
  CHECK(held_layers(*src).holds(0, 4));

  ShardOptions ends{0, 0, true, true};
  CHECK(write_shard(*src, ends, dir + "/ends.gguf") == 12);
  auto e = GgufFile::open(dir + "/ends.gguf");
  CHECK(e->find_tensor("token_embd.weight"));
  CHECK(e->find_tensor("output.weight"));
  CHECK(e->find_tensor("output_norm.weight"));
  CHECK(!e->find_tensor("blk.1.attn_q.weight"));

  // A shard of a shard keeps the original identity and name; asking past its range fails.
  ShardOptions sub{2, 2, false, false};
  CHECK(write_shard(*shard, sub, dir + "/sub.gguf") == 9);
  auto s2 = GgufFile::open(dir + "/sub.gguf");
  CHECK(model_identity(*s2) == source_identity);
  CHECK(s2->metadata().require_string("baton.shard.source_name") == "stories260K.gguf");
  CHECK_THROWS_WITH(write_shard(*shard, ShardOptions{0, 1, false, false}, dir + "/bad.gguf"),
                    Catch::Contains("holds layers 1-2, asked for 0-1"));
}

TEST_CASE("model identity tells different models apart and ignores file order") {
  auto a = GgufFile::open(baton::test::shared_path("models/stories260K.gguf"));
  auto b = GgufFile::open(baton::test::shared_path("models/llama-2-tiny-random.gguf"));
  auto q = GgufFile::open(baton::test::shared_path("models/synthetic/tl256-Q8_0.gguf"));
  auto f = GgufFile::open(baton::test::shared_path("models/synthetic/tl256-F32.gguf"));
  CHECK(model_identity(*a) != model_identity(*b));
  CHECK(model_identity(*q) != model_identity(*f));  // same shapes, different types
  CHECK(model_identity(*a) == model_identity(*GgufFile::open(a->path())));

  // Re-written with tensors and keys in reverse order: same identity.
  Metadata md;
  const auto& entries = a->metadata().entries();
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) md.set(it->first, it->second);
  GgufWriter w(md);
  for (auto it = a->tensors().rbegin(); it != a->tensors().rend(); ++it)
    w.add_tensor(it->name, it->type, it->ne, a->tensor_data(*it));
  CHECK(model_identity(*GgufFile::from_bytes(w.to_bytes())) == model_identity(*a));

  // Changing one hyper-parameter changes it.
  md.set_uint32("llama.context_length", 4096);
  CHECK(compute_model_identity(md, a->tensors()) != model_identity(*a));
}

TEST_CASE("tensor_layer parses blk.N names only") {
  CHECK(tensor_layer("blk.0.attn_q.weight") == 0);
  CHECK(tensor_layer("blk.31.ffn_up.weight") == 31);
  CHECK(tensor_layer("token_embd.weight") == -1);
  CHECK(tensor_layer("blk.x.attn_q.weight") == -1);
  CHECK(tensor_layer("blk.7") == -1);
  CHECK(tensor_layer("blk..w") == -1);
}
