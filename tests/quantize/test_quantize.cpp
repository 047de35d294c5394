// engine/quantize against llama-quantize's own output: quantizing tl256-F32 must reproduce the
// tensor types of llama.cpp's tl256-<TYPE> files and, since our quantizers are byte-exact with
// ggml's reference ones, their tensor bytes and metadata values.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>

#include "engine/base/error.h"
#include "engine/quantize/quantize_model.h"
#include "fixtures.h"
#include "gguf/gguf_file.h"

using namespace baton;

namespace {

void compare_with_llama_cpp(const std::string& type_name) {
  const auto ftype = quantize::parse_file_type(type_name);
  REQUIRE(ftype);
  const std::string out = test::temp_dir() + "/tl256-" + type_name + ".gguf";
  quantize::QuantizeOptions options;
  options.ftype = *ftype;
  options.n_threads = 2;
  const auto result = quantize::quantize_model(test::shared_path("models/synthetic/tl256-F32.gguf"), out, options);
  CHECK(result.n_quantized > 0);

  const auto ours = gguf::GgufFile::open(out);
  const auto ref = gguf::GgufFile::open(test::shared_path("models/synthetic/tl256-" + type_name + ".gguf"));
  REQUIRE(ours->tensors().size() == ref->tensors().size());
  std::map<GgmlType, int> type_counts;
  for (const auto& r : ref->tensors()) {
    INFO("tensor " << r.name);
    const auto& o = ours->require_tensor(r.name);
    CHECK(ggml_type_name(o.type) == ggml_type_name(r.type));
    CHECK(o.ne == r.ne);
    ++type_counts[o.type];
    if (o.type == r.type) {
      const auto a = ours->tensor_data(o), b = ref->tensor_data(r);
      REQUIRE(a.size() == b.size());
      CHECK(std::memcmp(a.data(), b.data(), a.size()) == 0);
    }
  }
  CHECK(ours->metadata().require_uint("general.file_type") == ref->metadata().require_uint("general.file_type"));
  CHECK(ours->metadata().require_uint("general.quantization_version") == 2);
  CHECK(ours->metadata().require_string("general.architecture") == "llama");
  CHECK(ours->metadata().require_string_array("tokenizer.ggml.tokens").size() == 512);
  CHECK(type_counts.size() >= 2);  // at least the quantized type and F32 norms
}

}  // namespace

TEST_CASE("quantize tl256-F32 reproduces llama-quantize's files", "[quantize]") {
  for (const char* type : {"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K_M", "Q5_K_M", "Q6_K", "Q3_K_M", "Q2_K"}) {
    SECTION(type) { compare_with_llama_cpp(type); }
  }
}

TEST_CASE("quantize refuses unknown types and names bad inputs", "[quantize]") {
  CHECK_FALSE(quantize::parse_file_type("Q4_K_XL"));
  CHECK(quantize::parse_file_type("q4_k_m") == quantize::FileType::kQ4_K_M);
  quantize::QuantizeOptions options;
  const std::string missing = test::temp_dir() + "/missing.gguf";
  CHECK_THROWS_WITH(quantize::quantize_model(missing, test::temp_dir() + "/out.gguf", options),
                    Catch::Contains("missing.gguf"));
}
