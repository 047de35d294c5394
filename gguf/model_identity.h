// A model's identity: a cheap fingerprint of what makes two files "the same model" for the
// pipeline — general.architecture, every "<arch>.*" hyper-parameter key and the tensor table
// (names, types, shapes; never the data). Two workers whose identities differ must not serve
// one pipeline. A shard written by write_shard() carries its source's identity in
// baton.shard.source_identity, so a shard is recognised as part of the model it was cut from.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.h"

namespace baton::gguf {

inline constexpr std::string_view kShardSourceIdentityKey = "baton.shard.source_identity";

// 32 lowercase hex digits (128 bits) over the architecture, "<arch>.*" keys and tensor table.
// Throws FormatError if general.architecture is missing or not a string.
std::string compute_model_identity(const Metadata& metadata, const std::vector<TensorInfo>& tensors);

// The identity of the model `file` belongs to: baton.shard.source_identity for a shard,
// otherwise compute_model_identity() over the file itself.
std::string model_identity(const GgufFile& file);

}  // namespace baton::gguf
