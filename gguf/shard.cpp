#include "gguf/shard.h"

#include <charconv>
#include <filesystem>

#include "engine/base/error.h"
#include "gguf/gguf_writer.h"
#include "gguf/model_identity.h"

namespace baton::gguf {
namespace {

bool starts_with_any(std::string_view name, std::initializer_list<std::string_view> prefixes) {
  for (auto p : prefixes)
    if (name.starts_with(p)) return true;
  return false;
}

// Metadata errors name the file (Metadata::source_name).
uint32_t block_count(const GgufFile& file) {
  const std::string arch = file.metadata().require_string("general.architecture");
  const uint64_t n = file.metadata().require_uint(arch + ".block_count");
  if (n > UINT32_MAX) fail<FormatError>("{}: {}.block_count = {} is not a plausible layer count", file.path(), arch, n);
  return static_cast<uint32_t>(n);
}

}  // namespace

int64_t tensor_layer(std::string_view name) {
  if (!name.starts_with("blk.")) return -1;
  name.remove_prefix(4);
  const auto dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos) return -1;
  uint32_t n = 0;
  auto [ptr, ec] = std::from_chars(name.data(), name.data() + dot, n);
  if (ec != std::errc() || ptr != name.data() + dot) return -1;
  return n;
}

HeldLayers held_layers(const GgufFile& file) {
  HeldLayers h;
  h.n_layer = block_count(file);
  h.last = h.n_layer == 0 ? 0 : h.n_layer - 1;
  const Metadata& md = file.metadata();
  if (!md.contains(kShardFirstLayerKey) && !md.contains(kShardLastLayerKey)) return h;
  const uint64_t first = md.require_uint(kShardFirstLayerKey);
  const uint64_t last = md.require_uint(kShardLastLayerKey);
  if (first > last || last >= h.n_layer)
    fail<FormatError>("{}: shard range {}-{} does not fit the model's {} layers", file.path(), first, last, h.n_layer);
  h.first = static_cast<uint32_t>(first);
  h.last = static_cast<uint32_t>(last);
  h.is_shard = true;
  return h;
}

void require_layers(const GgufFile& file, uint32_t first, uint32_t last) {
  const HeldLayers h = held_layers(file);
  if (h.holds(first, last)) return;
  if (first > last) fail<Error>("{}: empty layer range {}-{} requested", file.path(), first, last);
  if (h.is_shard)
    fail<Error>("shard {} holds layers {}-{}, asked for {}-{}", file.path(), h.first, h.last, first, last);
  fail<Error>("model {} has {} layers (0-{}), asked for {}-{}", file.path(), h.n_layer,
              h.n_layer == 0 ? 0 : h.n_layer - 1, first, last);
}

std::vector<const TensorInfo*> select_shard_tensors(const GgufFile& source, const ShardOptions& options) {
  require_layers(source, options.first_layer, options.last_layer);
  std::vector<const TensorInfo*> out;
  for (const auto& t : source.tensors()) {
    const int64_t layer = tensor_layer(t.name);
    bool keep;
    if (layer >= 0) keep = layer >= options.first_layer && layer <= options.last_layer;
    else if (starts_with_any(t.name, {"token_embd.", "token_embd_norm.", "position_embd.", "token_types."}))
      keep = options.with_embeddings;
    else if (starts_with_any(t.name, {"output.", "output_norm."})) keep = options.with_output;
    else keep = true;
    if (keep) out.push_back(&t);
  }
  return out;
}

size_t write_shard(const GgufFile& source, const ShardOptions& options, const std::string& out_path) {
  const auto tensors = select_shard_tensors(source, options);
  Metadata md = source.metadata();
  for (auto key : {"split.no", "split.count", "split.tensors.count"}) md.erase(key);
  const std::string identity = model_identity(source);
  std::string source_name =
      md.find_string(kShardSourceNameKey).value_or(std::filesystem::path(source.path()).filename().string());
  md.set_uint32(std::string(kShardFirstLayerKey), options.first_layer);
  md.set_uint32(std::string(kShardLastLayerKey), options.last_layer);
  md.set_string(std::string(kShardSourceIdentityKey), identity);
  md.set_string(std::string(kShardSourceNameKey), std::move(source_name));
  GgufWriter writer(std::move(md));
  for (const TensorInfo* t : tensors) writer.add_tensor(t->name, t->type, t->ne, source.tensor_data(*t));
  writer.write(out_path);
  return tensors.size();
}

}  // namespace baton::gguf
