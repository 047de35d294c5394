// The committed fuzz seed corpus (tests/gguf/corpus/) replayed through the parser: every file
// parses or is refused with a FormatError. The hidden test "[.corpus]" regenerates the seeds
// into $BATON_CORPUS_OUT (run: BATON_CORPUS_OUT=tests/gguf/corpus test_gguf "[.corpus]").
// fuzz-found-*.gguf are coverage-increasing inputs kept from libFuzzer runs of
// tests/fuzz/fuzz_gguf (5.7 M executions, no crash found); a crasher found later goes here too.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gguf/model_identity.h"
#include "gguf/shard.h"
#include "gguf_test_util.h"

using namespace baton;
using namespace baton::gguf;
using namespace baton::gguf::test;
namespace fs = std::filesystem;

namespace {

fs::path corpus_dir() {
  // BATON_SOURCE_DIR from the build (tests/CMakeLists.txt): __FILE__ is relative under ccache's CCACHE_BASEDIR.
  const fs::path dir = fs::path(BATON_SOURCE_DIR) / "tests" / "gguf" / "corpus";
  if (!fs::is_directory(dir)) FAIL("fuzz corpus directory missing: " << dir);
  return dir;
}

std::vector<uint8_t> read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<uint8_t> with_keys(std::initializer_list<std::pair<const char*, uint32_t>> keys) {
  Metadata md;
  md.set_string("general.architecture", "llama");
  for (auto [k, v] : keys) md.set_uint32(k, v);
  GgufWriter w(md);
  static const auto bytes = pattern_bytes(32 * 4, 9);
  w.add_tensor("blk.0.attn_q.weight", GgmlType::kF32, {32}, bytes);
  w.add_tensor("blk.1.attn_q.weight", GgmlType::kF32, {32}, bytes);
  w.add_tensor("token_embd.weight", GgmlType::kF32, {32}, bytes);
  return w.to_bytes();
}

}  // namespace

TEST_CASE("every file of the fuzz corpus parses or is refused with a FormatError") {
  size_t files = 0, accepted = 0;
  for (const auto& entry : fs::directory_iterator(corpus_dir())) {
    if (!entry.is_regular_file()) continue;
    INFO(entry.path().filename().string());
    const auto bytes = read_all(entry.path());
    try {
      auto f = GgufFile::from_bytes(bytes, entry.path().filename().string());
      for (const auto& t : f->tensors()) CHECK(f->tensor_data(t).size() == t.n_bytes);
      if (f->metadata().find("general.architecture")) {
        try {
          CHECK(model_identity(*f).size() == 32);
          (void)held_layers(*f);
        } catch (const FormatError&) {
        }
      }
      ++accepted;
    } catch (const FormatError& e) {
      CHECK(std::string(e.what()).size() > 10);
    }
    ++files;
  }
  CHECK(files >= 30);
  CHECK(accepted >= 5);
}

TEST_CASE("regenerate the fuzz seed corpus", "[.corpus]") {
  const char* out = std::getenv("BATON_CORPUS_OUT");
  REQUIRE(out);
  fs::create_directories(out);
  auto save = [&](const std::string& name, const std::vector<uint8_t>& b) {
    std::ofstream(fs::path(out) / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  };
  const auto image = small_model_bytes();
  save("valid-small-model.gguf", image);
  save("valid-empty-v2.gguf", ByteBuilder().header(0, 0, 2).bytes());
  save("valid-empty-v3.gguf", ByteBuilder().header(0, 0, 3).bytes());
  save("valid-layers.gguf", with_keys({{"llama.block_count", 2}}));
  save("valid-shard.gguf",
       with_keys({{"llama.block_count", 4}, {"baton.shard.first_layer", 0}, {"baton.shard.last_layer", 1}}));
  save("bad-shard-range.gguf",
       with_keys({{"llama.block_count", 2}, {"baton.shard.first_layer", 1}, {"baton.shard.last_layer", 5}}));
  save("valid-split-keys.gguf", with_keys({{"split.no", 0}, {"split.count", 2}, {"split.tensors.count", 3}}));
  save("valid-align-64.gguf", with_keys({{"general.alignment", 64}}));
  for (size_t cut : {0, 3, 4, 8, 15, 24, 40, 100, 300, 700, 1000}) {
    if (cut < image.size()) save(fmt::format("truncated-{}.gguf", cut), {image.begin(), image.begin() + cut});
  }
  save("truncated-last-byte.gguf", {image.begin(), image.end() - 1});
  for (size_t at : {4, 8, 16, 30, 60, 200, 500, 900}) {
    auto bad = image;
    bad[at] ^= 0xff;
    save(fmt::format("flipped-{}.gguf", at), bad);
  }
  save("v1.gguf", ByteBuilder().header(0, 0, 1).bytes());
  save("big-endian.gguf", ByteBuilder().header(0, 0, 0x03000000).bytes());
  save("huge-tensor-count.gguf", ByteBuilder().header(1ull << 60, 0).bytes());
  save("huge-kv-count.gguf", ByteBuilder().header(0, 1ull << 60).bytes());
  save("huge-string.gguf", ByteBuilder().header(0, 1).u64(1ull << 63).zeros(16).bytes());
  save("huge-array.gguf", ByteBuilder().header(0, 1).str("a").u32(9).u32(8).u64(1ull << 60).zeros(16).bytes());
  save("nested-array.gguf", ByteBuilder().header(0, 1).str("a").u32(9).u32(9).u64(1).u32(4).u64(0).bytes());
  save("bad-alignment.gguf", ByteBuilder().header(0, 1).kv_u32("general.alignment", 48).bytes());
  save("unknown-type.gguf", ByteBuilder().header(1, 0).tensor("t", {8}, 99, 0).pad_to(32).zeros(32).bytes());
  save("misaligned.gguf", ByteBuilder().header(1, 0).tensor("t", {8}, 0, 8).pad_to(32).zeros(64).bytes());
  save("past-eof.gguf", ByteBuilder().header(1, 0).tensor("t", {64}, 0, 0).pad_to(32).zeros(32).bytes());
  save("overlap.gguf",
       ByteBuilder().header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {16}, 0, 32).pad_to(32).zeros(128).bytes());
  save("q8-row.gguf", ByteBuilder().header(1, 0).tensor("t", {48}, 8, 0).pad_to(32).zeros(64).bytes());
  save("five-dims.gguf", ByteBuilder().header(1, 0).tensor("t", {1, 1, 1, 1, 1}, 0, 0).pad_to(32).zeros(32).bytes());
  save("dup-tensor.gguf",
       ByteBuilder().header(2, 0).tensor("a", {8}, 0, 0).tensor("a", {8}, 0, 32).pad_to(32).zeros(64).bytes());
}
