// Converts a Hugging Face byte-level BPE tokenizer directory (vocab.json, merges.txt and, when
// present, tokenizer_config.json / config.json) into the tokenizer.ggml.* metadata of a
// vocab-only GGUF, the way llama.cpp's converter lays it out: tokens ordered by id, gaps filled
// with "[PAD<id>]" (UNUSED), added tokens CONTROL when "special" else USER_DEFINED.
#pragma once

#include <string>

#include "gguf/gguf_metadata.h"

namespace baton::tokenizer {

struct HfVocabOptions {
  // tokenizer.ggml.pre; empty = recognise the merges (known fingerprint) or the tokenizer_class,
  // else fail asking for one.
  std::string pre;
};

// Throws baton::Error naming the file and the problem (missing file, bad JSON, a merge line
// without a space, an unknown --pre, a pre-tokenizer that cannot be guessed).
gguf::Metadata metadata_from_hf_dir(const std::string& dir, const HfVocabOptions& options = {});

}  // namespace baton::tokenizer
