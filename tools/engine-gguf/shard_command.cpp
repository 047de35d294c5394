// engine-gguf shard FILE --layers A-B -o OUT [--with-embeddings] [--with-output]: writes a
// GGUF holding only layers A..B (inclusive) and the requested global tensors (gguf/shard.h).
#include <fmt/format.h>

#include <charconv>

#include "command.h"
#include "engine/base/error.h"
#include "gguf/gguf_file.h"
#include "gguf/model_identity.h"
#include "gguf/shard.h"

namespace {

using namespace baton::gguf;

uint32_t parse_layer(std::string_view s, std::string_view whole) {
  uint32_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size())
    baton::fail<baton::Error>("--layers '{}': expected A-B with non-negative integers, e.g. 0-3", whole);
  return v;
}

int run_shard(CLI::App& app, const baton::tools::ParseCommandLine& parse) {
  app.description("Write a shard holding layers A..B (inclusive) of a model");
  std::string path, out, layers;
  ShardOptions options;
  app.add_option("FILE", path, "source GGUF (or the first part of a split model)")->required();
  app.add_option("--layers", layers, "inclusive layer range A-B, e.g. 0-3")->required();
  app.add_option("-o,--output", out, "shard file to write")->required();
  app.add_flag("--with-embeddings", options.with_embeddings, "also keep token_embd.weight");
  app.add_flag("--with-output", options.with_output, "also keep output_norm.weight and output.weight");
  if (auto code = parse()) return *code;

  const auto dash = layers.find('-');
  if (dash == std::string::npos) baton::fail<baton::Error>("--layers '{}': expected A-B, e.g. 0-3", layers);
  options.first_layer = parse_layer(std::string_view(layers).substr(0, dash), layers);
  options.last_layer = parse_layer(std::string_view(layers).substr(dash + 1), layers);

  auto f = GgufFile::open(path);
  const size_t n = write_shard(*f, options, out);
  fmt::print("wrote {}: layers {}-{} of {}, {} tensors{}{}, identity {}\n", out, options.first_layer,
             options.last_layer, held_layers(*f).n_layer, n, options.with_embeddings ? ", embeddings" : "",
             options.with_output ? ", output" : "", model_identity(*f));
  return 0;
}

const bool registered_shard = baton::tools::register_command(
    {"shard", "write a GGUF holding only a range of layers (plus optional embeddings/output)", run_shard});

}  // namespace
