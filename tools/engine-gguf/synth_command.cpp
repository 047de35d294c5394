// engine-gguf synth: writes a random-weight model of any shape (llama, qwen2, qwen3) in F32
// or F16, with the tokenizer of another GGUF (--vocab-from) or a minimal byte-level SPM
// vocabulary. For benchmarks and tests; the weights are seeded, so a file is reproducible.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <random>

#include "command.h"
#include "engine/base/error.h"
#include "engine/base/fp16.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "gguf/tensor_names.h"

namespace {

using namespace baton;
using namespace baton::gguf;

struct SynthOptions {
  std::string arch = "llama", vocab_from, output, type = "f32";
  int64_t n_embd = 256, n_layer = 4, n_head = 8, n_head_kv = 0, n_ff = 768, head_dim = 0, n_ctx = 2048;
  double rope_base = 10000, rms_eps = 1e-5;
  uint64_t seed = 1;
};

// Deterministic, fast normal-ish numbers (sum of uniforms) so 1B-parameter files write quickly.
class Noise {
 public:
  explicit Noise(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  float next() {
    float s = 0;
    for (int i = 0; i < 4; ++i) s += static_cast<float>(step() >> 40) * (1.0f / 16777216.0f);
    return (s - 2.0f) * 1.7320508f;  // mean 0, variance 1
  }

 private:
  uint64_t step() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_;
  }
  uint64_t state_;
};

void copy_tokenizer(const Metadata& from, Metadata& to) {
  for (const auto& [key, value] : from.entries())
    if (key.rfind("tokenizer.", 0) == 0) to.set(key, value);
}

void byte_vocab(Metadata& md) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<double> scores = {0, 0, 0};
  std::vector<int64_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(fmt::format("<0x{:02X}>", b));
    scores.push_back(0);
    types.push_back(6);
  }
  md.set_string("tokenizer.ggml.model", "llama");
  md.set_string_array("tokenizer.ggml.tokens", tokens);
  md.set_float32_array("tokenizer.ggml.scores", scores);
  md.set_int32_array("tokenizer.ggml.token_type", types);
  md.set_uint32("tokenizer.ggml.bos_token_id", 1);
  md.set_uint32("tokenizer.ggml.eos_token_id", 2);
  md.set_uint32("tokenizer.ggml.unknown_token_id", 0);
}

class TensorStore {
 public:
  TensorStore(GgufWriter& w, GgmlType type, Noise& noise) : writer_(w), type_(type), noise_(noise) {}

  // A matrix [rows, k] (ne = [k, rows]) with entries of standard deviation scale.
  void matrix(const std::string& name, int64_t k, int64_t rows, float scale) {
    add(name, {static_cast<uint64_t>(k), static_cast<uint64_t>(rows)}, k * rows, scale, 0.0f, type_);
  }
  void vector(const std::string& name, int64_t n, float scale, float offset) {
    add(name, {static_cast<uint64_t>(n)}, n, scale, offset, GgmlType::kF32);
  }

 private:
  void add(const std::string& name, std::vector<uint64_t> ne, int64_t n, float scale, float offset, GgmlType type) {
    auto& bytes = buffers_.emplace_back();
    if (type == GgmlType::kF16) {
      bytes.resize(static_cast<size_t>(n) * 2);
      auto* p = reinterpret_cast<uint16_t*>(bytes.data());
      for (int64_t i = 0; i < n; ++i) p[i] = fp32_to_fp16(offset + scale * noise_.next());
    } else {
      bytes.resize(static_cast<size_t>(n) * 4);
      auto* p = reinterpret_cast<float*>(bytes.data());
      for (int64_t i = 0; i < n; ++i) p[i] = offset + scale * noise_.next();
    }
    writer_.add_tensor(name, type, std::move(ne), bytes);
  }

  GgufWriter& writer_;
  GgmlType type_;
  Noise& noise_;
  std::vector<std::vector<uint8_t>> buffers_;  // kept until write()
};

int run_synth(CLI::App& app, const baton::tools::ParseCommandLine& parse) {
  app.description("Write a random-weight model of any shape");
  SynthOptions o;
  app.add_option("--arch", o.arch, "llama, qwen2 or qwen3")->check(CLI::IsMember({"llama", "qwen2", "qwen3"}));
  app.add_option("--n-embd", o.n_embd, "embedding width")->check(CLI::Range(1, 1 << 16));
  app.add_option("--n-layer", o.n_layer, "transformer blocks")->check(CLI::Range(1, 1024));
  app.add_option("--n-head", o.n_head, "query heads")->check(CLI::Range(1, 1024));
  app.add_option("--n-head-kv", o.n_head_kv, "key/value heads (default: n-head)")->check(CLI::Range(0, 1024));
  app.add_option("--n-ff", o.n_ff, "feed-forward width")->check(CLI::Range(1, 1 << 20));
  app.add_option("--head-dim", o.head_dim, "head width (default: n-embd / n-head)")->check(CLI::Range(0, 1024));
  app.add_option("--ctx", o.n_ctx, "context_length to record")->check(CLI::Range(16, 1 << 20));
  app.add_option("--rope-base", o.rope_base, "rope.freq_base");
  app.add_option("--vocab-from", o.vocab_from,
                 "copy the tokenizer of this GGUF (default: a 259-token byte vocabulary)");
  app.add_option("--type", o.type, "f32 or f16 weight matrices")->check(CLI::IsMember({"f32", "f16"}));
  app.add_option("--seed", o.seed, "random seed");
  app.add_option("-o,--output", o.output, "file to write")->required();
  if (auto code = parse()) return *code;

  if (o.n_head_kv == 0) o.n_head_kv = o.n_head;
  if (o.n_head % o.n_head_kv != 0) fail("--n-head {} must be a multiple of --n-head-kv {}", o.n_head, o.n_head_kv);
  if (o.head_dim == 0) {
    if (o.n_embd % o.n_head != 0)
      fail("--n-embd {} is not divisible by --n-head {}: give --head-dim", o.n_embd, o.n_head);
    o.head_dim = o.n_embd / o.n_head;
  }
  if (o.head_dim % 2 != 0) fail("head dim {} must be even (RoPE rotates pairs)", o.head_dim);
  if (o.arch != "llama") {
    if (!app.count("--rope-base")) o.rope_base = 1e6;
    o.rms_eps = 1e-6;
  }

  Metadata md;
  md.set_string("general.architecture", o.arch);
  md.set_string("general.name", fmt::format("synthetic-{}-{}x{}", o.arch, o.n_layer, o.n_embd));
  md.set_uint32("general.file_type", o.type == "f16" ? 1 : 0);
  const std::string p = o.arch + ".";
  md.set_uint32(p + "context_length", static_cast<uint32_t>(o.n_ctx));
  md.set_uint32(p + "embedding_length", static_cast<uint32_t>(o.n_embd));
  md.set_uint32(p + "block_count", static_cast<uint32_t>(o.n_layer));
  md.set_uint32(p + "feed_forward_length", static_cast<uint32_t>(o.n_ff));
  md.set_uint32(p + "attention.head_count", static_cast<uint32_t>(o.n_head));
  md.set_uint32(p + "attention.head_count_kv", static_cast<uint32_t>(o.n_head_kv));
  md.set_uint32(p + "attention.key_length", static_cast<uint32_t>(o.head_dim));
  md.set_uint32(p + "attention.value_length", static_cast<uint32_t>(o.head_dim));
  md.set_uint32(p + "rope.dimension_count", static_cast<uint32_t>(o.head_dim));
  md.set_float32(p + "rope.freq_base", static_cast<float>(o.rope_base));
  md.set_float32(p + "attention.layer_norm_rms_epsilon", static_cast<float>(o.rms_eps));
  if (!o.vocab_from.empty()) {
    auto vocab = GgufFile::open(o.vocab_from);
    copy_tokenizer(vocab->metadata(), md);
    if (!md.contains("tokenizer.ggml.tokens")) fail("{} has no tokenizer.ggml.tokens", o.vocab_from);
  } else {
    byte_vocab(md);
  }
  const int64_t n_vocab = static_cast<int64_t>(md.require_string_array("tokenizer.ggml.tokens").size());

  GgufWriter writer(md);
  Noise noise(o.seed);
  TensorStore store(writer, o.type == "f16" ? GgmlType::kF16 : GgmlType::kF32, noise);
  const int64_t q_dim = o.n_head * o.head_dim, kv_dim = o.n_head_kv * o.head_dim;
  auto inv_sqrt = [](int64_t k) { return 1.0f / std::sqrt(static_cast<float>(k)); };
  store.matrix(std::string(tensor_names::kTokenEmbd), o.n_embd, n_vocab, 1.0f);
  for (int64_t il = 0; il < o.n_layer; ++il) {
    auto name = [&](std::string_view suffix) { return tensor_names::block_tensor_name(il, suffix); };
    store.vector(name(tensor_names::kAttnNorm), o.n_embd, 0.1f, 1.0f);
    store.matrix(name(tensor_names::kAttnQ), o.n_embd, q_dim, inv_sqrt(o.n_embd));
    store.matrix(name(tensor_names::kAttnK), o.n_embd, kv_dim, inv_sqrt(o.n_embd));
    store.matrix(name(tensor_names::kAttnV), o.n_embd, kv_dim, inv_sqrt(o.n_embd));
    if (o.arch == "qwen2") {
      store.vector(name(tensor_names::kAttnQBias), q_dim, 0.1f, 0.0f);
      store.vector(name(tensor_names::kAttnKBias), kv_dim, 0.1f, 0.0f);
      store.vector(name(tensor_names::kAttnVBias), kv_dim, 0.1f, 0.0f);
    }
    if (o.arch == "qwen3") {
      store.vector(name(tensor_names::kAttnQNorm), o.head_dim, 0.1f, 1.0f);
      store.vector(name(tensor_names::kAttnKNorm), o.head_dim, 0.1f, 1.0f);
    }
    store.matrix(name(tensor_names::kAttnOutput), q_dim, o.n_embd, inv_sqrt(q_dim) * 0.5f);
    store.vector(name(tensor_names::kFfnNorm), o.n_embd, 0.1f, 1.0f);
    store.matrix(name(tensor_names::kFfnGate), o.n_embd, o.n_ff, inv_sqrt(o.n_embd));
    store.matrix(name(tensor_names::kFfnUp), o.n_embd, o.n_ff, inv_sqrt(o.n_embd));
    store.matrix(name(tensor_names::kFfnDown), o.n_ff, o.n_embd, inv_sqrt(o.n_ff) * 0.5f);
  }
  store.vector(std::string(tensor_names::kOutputNorm), o.n_embd, 0.1f, 1.0f);
  store.matrix(std::string(tensor_names::kOutput), o.n_embd, n_vocab, inv_sqrt(o.n_embd) * 4.0f);
  writer.write(o.output);
  fmt::print("wrote {}: {} {} layers, n_embd {}, n_vocab {}, {}\n", o.output, o.arch, o.n_layer, o.n_embd, n_vocab,
             o.type);
  return 0;
}

const bool registered_synth =
    baton::tools::register_command({"synth", "write a random-weight model of any shape (F32 or F16)", run_synth});

}  // namespace
