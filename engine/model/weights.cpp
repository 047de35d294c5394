#include "engine/model/weights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cstring>

#include "engine/base/error.h"
#include "kernels/type_ops.h"

namespace baton {
namespace {

std::string shape_str(const std::vector<uint64_t>& ne) { return fmt::format("[{}]", fmt::join(ne, ", ")); }

void check_shape(const gguf::TensorInfo& t, std::vector<uint64_t> expected) {
  if (t.ne != expected)
    fail("tensor {} has shape {} (ggml order), expected {}", t.name, shape_str(t.ne), shape_str(expected));
}

Matrix bind_matrix(const gguf::GgufFile& file, const std::string& name, int64_t k, int64_t n_rows) {
  const gguf::TensorInfo& t = file.require_tensor(name);
  check_shape(t, {static_cast<uint64_t>(k), static_cast<uint64_t>(n_rows)});
  const auto& ops = kernels::require_type_ops(t.type, t.name);
  (void)ops;
  file.prefetch(t);
  Matrix m;
  m.type = t.type;
  m.data = file.tensor_data(t).data();
  m.n_rows = n_rows;
  m.k = k;
  m.row_bytes = t.row_bytes();
  m.name = t.name;
  return m;
}

// The matrices of a layer, in a fixed order.
std::array<Matrix*, 7> matrices(LayerWeights& w) {
  return {&w.wq, &w.wk, &w.wv, &w.wo, &w.w_gate, &w.w_up, &w.w_down};
}

size_t matrix_bytes(const Matrix& m) { return m.row_bytes * static_cast<size_t>(m.n_rows); }

// Copies m into `arena` (in its type's load-time layout when the active ISA has one), releases
// the mmap pages it came from and points m at the copy.
void place_matrix(const gguf::GgufFile& file, Matrix& m, WeightArena& arena) {
  const size_t bytes = matrix_bytes(m);
  uint8_t* dst = arena.allocate(bytes);
  const auto* src = static_cast<const uint8_t*>(m.data);
  const kernels::TypeOps* ops = kernels::find_type_ops(m.type, kernels::active_isa());
  int64_t n_rep = 0;
  if (ops && ops->repack_rows > 0 && ops->repack && ops->unrepack && ops->gemm_repacked)
    n_rep = m.n_rows / ops->repack_rows * ops->repack_rows;
  if (n_rep > 0) ops->repack(src, dst, n_rep, m.k);
  const size_t done = m.row_bytes * static_cast<size_t>(n_rep);
  std::memcpy(dst + done, src + done, bytes - done);
  file.release(file.require_tensor(m.name));
  m.data = dst;
  m.repacked_rows = n_rep;
}

std::vector<float> load_vector(const gguf::GgufFile& file, const std::string& name, int64_t n) {
  const gguf::TensorInfo& t = file.require_tensor(name);
  check_shape(t, {static_cast<uint64_t>(n)});
  std::vector<float> out(static_cast<size_t>(n));
  const auto* ops = kernels::find_type_ops(t.type, kernels::active_isa());
  if (!ops || !ops->to_float) fail<UnsupportedError>("unsupported type {} for tensor {}", ggml_type_name(t.type), name);
  ops->to_float(file.tensor_data(t).data(), out.data(), n);
  return out;
}

std::vector<float> load_optional_vector(const gguf::GgufFile& file, const std::string& name, int64_t n) {
  return file.find_tensor(name) ? load_vector(file, name, n) : std::vector<float>{};
}

}  // namespace

std::vector<LayerWeights> bind_layers(const gguf::GgufFile& file, const ModelConfig& c, int64_t first,
                                      int64_t last, WeightPlacement placement) {
  if (first < 0 || last > c.n_layer || first >= last)
    fail("layer range [{}, {}) is not inside the model's {} layers", first, last, c.n_layer);
  std::vector<LayerWeights> layers;
  layers.reserve(static_cast<size_t>(last - first));
  for (int64_t il = first; il < last; ++il) {
    auto name = [&](const char* suffix) { return fmt::format("blk.{}.{}", il, suffix); };
    LayerWeights w;
    w.attn_norm = load_vector(file, name("attn_norm.weight"), c.n_embd);
    w.wq = bind_matrix(file, name("attn_q.weight"), c.n_embd, c.q_dim());
    w.wk = bind_matrix(file, name("attn_k.weight"), c.n_embd, c.kv_dim());
    w.wv = bind_matrix(file, name("attn_v.weight"), c.n_embd, c.kv_dim());
    w.wo = bind_matrix(file, name("attn_output.weight"), c.q_dim(), c.n_embd);
    if (c.arch == Arch::kQwen2) {
      w.bq = load_vector(file, name("attn_q.bias"), c.q_dim());
      w.bk = load_vector(file, name("attn_k.bias"), c.kv_dim());
      w.bv = load_vector(file, name("attn_v.bias"), c.kv_dim());
    } else {
      w.bq = load_optional_vector(file, name("attn_q.bias"), c.q_dim());
      w.bk = load_optional_vector(file, name("attn_k.bias"), c.kv_dim());
      w.bv = load_optional_vector(file, name("attn_v.bias"), c.kv_dim());
    }
    if (c.arch == Arch::kQwen3) {
      w.q_norm = load_vector(file, name("attn_q_norm.weight"), c.head_dim);
      w.k_norm = load_vector(file, name("attn_k_norm.weight"), c.head_dim);
    }
    w.ffn_norm = load_vector(file, name("ffn_norm.weight"), c.n_embd);
    w.w_gate = bind_matrix(file, name("ffn_gate.weight"), c.n_embd, c.n_ff);
    w.w_up = bind_matrix(file, name("ffn_up.weight"), c.n_embd, c.n_ff);
    w.w_down = bind_matrix(file, name("ffn_down.weight"), c.n_ff, c.n_embd);
    layers.push_back(std::move(w));
  }
  if (placement == WeightPlacement::kResident) {
    size_t total = 0;
    for (auto& w : layers)
      for (Matrix* m : matrices(w)) total += WeightArena::padded(matrix_bytes(*m));
    auto arena = std::make_shared<WeightArena>(total);
    for (auto& w : layers) {
      for (Matrix* m : matrices(w)) place_matrix(file, *m, *arena);
      w.storage = arena;
    }
  }
  return layers;
}

std::vector<float> load_rope_freqs(const gguf::GgufFile& file, const ModelConfig& c) {
  return load_optional_vector(file, "rope_freqs.weight", c.n_rot / 2);
}

HeadWeights bind_head(const gguf::GgufFile& file, const ModelConfig& c, WeightPlacement placement) {
  HeadWeights h;
  const gguf::TensorInfo& embd = file.require_tensor("token_embd.weight");
  if (embd.ne.size() != 2 || static_cast<int64_t>(embd.ne[0]) != c.n_embd)
    fail("tensor token_embd.weight has shape {}, expected [{}, n_vocab]", shape_str(embd.ne), c.n_embd);
  int64_t n_vocab = static_cast<int64_t>(embd.ne[1]);
  if (c.n_vocab != 0 && c.n_vocab != n_vocab)
    fail("tensor token_embd.weight has {} rows but the tokenizer has {} tokens", n_vocab, c.n_vocab);
  h.token_embd = bind_matrix(file, "token_embd.weight", c.n_embd, n_vocab);
  h.output_norm = load_vector(file, "output_norm.weight", c.n_embd);
  const bool tied = !file.find_tensor("output.weight");
  h.output = tied ? h.token_embd : bind_matrix(file, "output.weight", c.n_embd, n_vocab);
  if (!tied && placement == WeightPlacement::kResident) {
    auto arena = std::make_shared<WeightArena>(WeightArena::padded(matrix_bytes(h.output)));
    place_matrix(file, h.output, *arena);
    h.storage = std::move(arena);
  }
  h.rope_freqs = load_rope_freqs(file, c);
  return h;
}

}  // namespace baton
