// Memory residency of a mapped model. /proc/self/smaps "Rss" of the file's mapping counts
// only the pages mapped into THIS process's page tables, whether or not the file is in the
// page cache (it is: we just wrote it). So it shows exactly what open/prefetch/touch/release
// did to our address space: open maps the header only, touching layers [a,b) maps those
// tensors' bytes (plus at most the kernel's fault-around window at the edges), release
// unmaps them again.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fixtures.h"
#include "gguf/shard.h"
#include "gguf_test_util.h"

using namespace baton;
using namespace baton::gguf;
using namespace baton::gguf::test;

namespace {

constexpr int kLayers = 24;
constexpr uint64_t kRow = 256, kRows = 2048;  // f32 [256, 2048] = 2 MiB per layer
constexpr uint64_t kLayerBytes = kRow * kRows * 4;
constexpr uint64_t kSlack = 1 << 20;  // fault-around (64 KiB) at each edge, with margin

// Sum of "Rss:" over the mappings of `path` in /proc/self/smaps, in bytes.
uint64_t mapping_rss(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  REQUIRE(smaps);
  std::string line;
  bool in_mapping = false;
  uint64_t total_kb = 0;
  while (std::getline(smaps, line)) {
    const bool is_header =
        !line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') < line.find(' ');
    if (is_header) {
      in_mapping = line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0;
    } else if (in_mapping && line.rfind("Rss:", 0) == 0) {
      std::istringstream in(line.substr(4));
      uint64_t kb = 0;
      in >> kb;
      total_kb += kb;
    }
  }
  return total_kb * 1024;
}

std::string write_big_model() {
  const std::string path = std::filesystem::canonical(baton::test::temp_dir()).string() + "/big.gguf";
  const auto payload = pattern_bytes(kLayerBytes, 5);  // one buffer, referenced by every tensor
  Metadata md;
  md.set_string("general.architecture", "llama");
  md.set_uint32("llama.block_count", kLayers);
  GgufWriter w(md);
  for (int l = 0; l < kLayers; ++l)
    w.add_tensor(fmt::format("blk.{}.ffn_up.weight", l), GgmlType::kF32, {kRow, kRows}, payload);
  w.write(path);
  return path;
}

uint64_t touch(std::span<const uint8_t> d) {
  uint64_t sum = 0;
  for (size_t i = 0; i < d.size(); i += 4096) sum += static_cast<volatile const uint8_t&>(d[i]);
  return sum + d.back();
}

}  // namespace

TEST_CASE("opening a model maps only its header, touching layers maps only those layers") {
  const std::string path = write_big_model();
  const uint64_t file_bytes = std::filesystem::file_size(path);
  REQUIRE(file_bytes > 48'000'000);

  auto f = GgufFile::open(path);
  const uint64_t after_open = mapping_rss(path);
  INFO("file " << file_bytes << " B, rss after open " << after_open << " B");
  CHECK(after_open > 0);       // the header was read through the mapping
  CHECK(after_open < kSlack);  // and nothing else

  const int a = 8, b = 12;  // layers [a, b)
  require_layers(*f, a, b - 1);
  uint64_t sum = 0;
  for (int l = a; l < b; ++l) {
    const TensorInfo& t = f->require_tensor(fmt::format("blk.{}.ffn_up.weight", l));
    f->prefetch(t);
    sum += touch(f->tensor_data(t));
  }
  CHECK(sum > 0);
  const uint64_t touched = mapping_rss(path);
  const uint64_t expected = (b - a) * kLayerBytes;
  INFO("rss after touching layers " << a << "-" << b - 1 << ": " << touched << " B, their tensors: " << expected);
  CHECK(touched >= expected);
  CHECK(touched <= expected + after_open + kSlack);
  CHECK(touched < file_bytes / 4);

  for (int l = a; l < b; ++l) f->release(f->require_tensor(fmt::format("blk.{}.ffn_up.weight", l)));
  const uint64_t released = mapping_rss(path);
  INFO("rss after release: " << released << " B");
  CHECK(released < after_open + kSlack);

  // The data is still readable after release (the pages come back from the file).
  const TensorInfo& t = f->require_tensor(fmt::format("blk.{}.ffn_up.weight", a));
  const auto expect = pattern_bytes(kLayerBytes, 5);
  auto d = f->tensor_data(t);
  CHECK(std::equal(d.begin(), d.end(), expect.begin(), expect.end()));
}
