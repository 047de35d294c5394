// ModelConfig refuses, at load, the shapes the kernels' fixed buffers cannot take: the kernels
// never check user data (engine/base/error.h), so a too-wide head must not get past from_metadata.
#include <catch2/catch.hpp>

#include "engine/base/error.h"
#include "engine/model/model_config.h"
#include "gguf/gguf_metadata.h"

namespace {

baton::gguf::Metadata llama_metadata_with_head(uint32_t n_embd, uint32_t n_head) {
  baton::gguf::Metadata meta;
  meta.set_string("general.architecture", "llama");
  meta.set_uint32("llama.embedding_length", n_embd);
  meta.set_uint32("llama.block_count", 1);
  meta.set_uint32("llama.attention.head_count", n_head);
  meta.set_uint32("llama.feed_forward_length", 64);
  return meta;
}

}  // namespace

TEST_CASE("ModelConfig refuses a head wider than the attention kernels take") {
  CHECK(baton::ModelConfig::from_metadata(llama_metadata_with_head(2048, 4)).head_dim == 512);
  CHECK_THROWS_AS(baton::ModelConfig::from_metadata(llama_metadata_with_head(4096, 4)), baton::UnsupportedError);
  CHECK_THROWS_WITH(baton::ModelConfig::from_metadata(llama_metadata_with_head(4096, 4)),
                    Catch::Contains("attention.key_length 1024"));
}
