// `-c` above the context a model was trained with: accepted (RoPE-scaled use is legitimate) but
// said once, on stderr, as llama.cpp does ("n_ctx_per_seq > n_ctx_train -- possible training
// context overflow"); positions past the trained length were never seen in training.
#pragma once

#include <fmt/core.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "engine/model/model_config.h"
#include "gguf/gguf_file.h"

namespace baton::tools {

// Reads only the model's metadata; an unreadable file is left to the load, which reports it.
inline void warn_if_ctx_above_trained(std::string_view tool, const std::string& model_path, int64_t n_ctx) {
  if (n_ctx <= 0) return;
  int64_t trained = 0;
  try {
    trained = ModelConfig::from_metadata(gguf::GgufFile::open(model_path)->metadata()).n_ctx_train;
  } catch (const std::exception&) {
    return;
  }
  if (trained > 0 && n_ctx > trained)
    fmt::print(stderr,
               "{}: warning: -c {} is above the context the model was trained with ({}): possible training context "
               "overflow; output past position {} may degrade\n",
               tool, n_ctx, trained, trained);
}

}  // namespace baton::tools
