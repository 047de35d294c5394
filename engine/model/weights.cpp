#include "engine/model/weights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <thread>

#include "engine/base/error.h"
#include "engine/model/load_progress_listener.h"
#include "gguf/tensor_names.h"
#include "kernels/core/type_ops.h"

namespace baton {

namespace tensor_names = gguf::tensor_names;
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
std::array<Matrix*, 7> matrices(LayerWeights& w) { return {&w.wq, &w.wk, &w.wv, &w.wo, &w.w_gate, &w.w_up, &w.w_down}; }

size_t matrix_bytes(const Matrix& m) { return m.row_bytes * static_cast<size_t>(m.n_rows); }

// One matrix copied out of the mmap into dst (n_rep leading rows repacked by ops->repack).
struct Placement {
  Matrix* m;
  uint8_t* dst;
  const kernels::TypeOps* ops;
  int64_t n_rep;
  std::atomic<int64_t> slices_left{0};
};

// Rows per unit of copy work (a multiple of every repack group size).
constexpr int64_t kSliceRows = 256;

// Copies every matrix into its arena slot (in its type's load-time layout when the active ISA
// has one), on up to 4 threads in slices of kSliceRows rows; whoever copies a matrix's last
// slice releases the mmap pages it came from (matrices finish about in order, so resident
// memory grows by a few matrices at most). Then points the matrices at their copies.
void place_matrices(const gguf::GgufFile& file, std::vector<Matrix*> ms, WeightArena& arena) {
  std::vector<Placement> items(ms.size());
  std::vector<std::pair<size_t, int64_t>> work;  // (item, first row)
  for (size_t i = 0; i < ms.size(); ++i) {
    Matrix& m = *ms[i];
    const kernels::TypeOps* ops = kernels::find_type_ops(m.type, kernels::active_isa());
    int64_t n_rep = 0;
    if (ops && ops->has_repacked_layout() && kSliceRows % ops->repack_rows == 0)
      n_rep = m.n_rows / ops->repack_rows * ops->repack_rows;
    items[i].m = &m;
    items[i].dst = arena.allocate(matrix_bytes(m));
    items[i].ops = ops;
    items[i].n_rep = n_rep;
    int64_t n_slices = 0;
    for (int64_t r = 0; r < m.n_rows; r += kSliceRows, ++n_slices) work.push_back({i, r});
    items[i].slices_left.store(n_slices, std::memory_order_relaxed);
  }
  size_t total_bytes = 0;
  for (const Placement& p : items) total_bytes += matrix_bytes(*p.m);
  WeightProgressReporter progress(total_bytes);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t w = next.fetch_add(1); w < work.size(); w = next.fetch_add(1)) {
      Placement& p = items[work[w].first];
      const Matrix& m = *p.m;
      const int64_t r0 = work[w].second, r1 = std::min(m.n_rows, r0 + kSliceRows);
      const int64_t rep_end = std::clamp(p.n_rep, r0, r1);
      const auto* src = static_cast<const uint8_t*>(m.data);
      const size_t b0 = m.row_bytes * static_cast<size_t>(r0), b_rep = m.row_bytes * static_cast<size_t>(rep_end);
      if (rep_end > r0) p.ops->repack(src + b0, p.dst + b0, rep_end - r0, m.k);
      std::memcpy(p.dst + b_rep, src + b_rep, m.row_bytes * static_cast<size_t>(r1 - rep_end));
      if (p.slices_left.fetch_sub(1) == 1) file.release(file.require_tensor(m.name));
      progress.add(m.row_bytes * static_cast<size_t>(r1 - r0));
    }
  };
  const unsigned n_threads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < n_threads; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  progress.finish();
  for (Placement& p : items) {
    p.m->data = p.dst;
    p.m->repacked_rows = p.n_rep;
  }
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

std::vector<LayerWeights> bind_layers(const gguf::GgufFile& file, const ModelConfig& c, int64_t first, int64_t last,
                                      WeightPlacement placement) {
  if (first < 0 || last > c.n_layer || first >= last)
    fail("layer range [{}, {}) is not inside the model's {} layers", first, last, c.n_layer);
  std::vector<LayerWeights> layers;
  layers.reserve(static_cast<size_t>(last - first));
  for (int64_t il = first; il < last; ++il) {
    auto name = [&](std::string_view suffix) { return tensor_names::block_tensor_name(il, suffix); };
    LayerWeights w;
    w.attn_norm = load_vector(file, name(tensor_names::kAttnNorm), c.n_embd);
    w.wq = bind_matrix(file, name(tensor_names::kAttnQ), c.n_embd, c.q_dim());
    w.wk = bind_matrix(file, name(tensor_names::kAttnK), c.n_embd, c.kv_dim());
    w.wv = bind_matrix(file, name(tensor_names::kAttnV), c.n_embd, c.kv_dim());
    w.wo = bind_matrix(file, name(tensor_names::kAttnOutput), c.q_dim(), c.n_embd);
    if (c.arch == Arch::kQwen2) {
      w.bq = load_vector(file, name(tensor_names::kAttnQBias), c.q_dim());
      w.bk = load_vector(file, name(tensor_names::kAttnKBias), c.kv_dim());
      w.bv = load_vector(file, name(tensor_names::kAttnVBias), c.kv_dim());
    } else {
      w.bq = load_optional_vector(file, name(tensor_names::kAttnQBias), c.q_dim());
      w.bk = load_optional_vector(file, name(tensor_names::kAttnKBias), c.kv_dim());
      w.bv = load_optional_vector(file, name(tensor_names::kAttnVBias), c.kv_dim());
    }
    if (c.arch == Arch::kQwen3) {
      w.q_norm = load_vector(file, name(tensor_names::kAttnQNorm), c.head_dim);
      w.k_norm = load_vector(file, name(tensor_names::kAttnKNorm), c.head_dim);
    }
    w.ffn_norm = load_vector(file, name(tensor_names::kFfnNorm), c.n_embd);
    w.w_gate = bind_matrix(file, name(tensor_names::kFfnGate), c.n_embd, c.n_ff);
    w.w_up = bind_matrix(file, name(tensor_names::kFfnUp), c.n_embd, c.n_ff);
    w.w_down = bind_matrix(file, name(tensor_names::kFfnDown), c.n_ff, c.n_embd);
    layers.push_back(std::move(w));
  }
  if (placement == WeightPlacement::kResident) {
    size_t total = 0;
    for (auto& w : layers)
      for (Matrix* m : matrices(w)) total += WeightArena::padded(matrix_bytes(*m));
    auto arena = std::make_shared<WeightArena>(total);
    std::vector<Matrix*> all;
    for (auto& w : layers) {
      for (Matrix* m : matrices(w)) all.push_back(m);
      w.storage = arena;
    }
    place_matrices(file, std::move(all), *arena);
  }
  return layers;
}

std::vector<float> load_rope_freqs(const gguf::GgufFile& file, const ModelConfig& c) {
  return load_optional_vector(file, std::string(tensor_names::kRopeFreqs), c.n_rot / 2);
}

HeadWeights bind_head(const gguf::GgufFile& file, const ModelConfig& c, WeightPlacement placement) {
  HeadWeights h;
  const gguf::TensorInfo& embd = file.require_tensor(tensor_names::kTokenEmbd);
  if (embd.ne.size() != 2 || static_cast<int64_t>(embd.ne[0]) != c.n_embd)
    fail("tensor token_embd.weight has shape {}, expected [{}, n_vocab]", shape_str(embd.ne), c.n_embd);
  int64_t n_vocab = static_cast<int64_t>(embd.ne[1]);
  if (c.n_vocab != 0 && c.n_vocab != n_vocab)
    fail("tensor token_embd.weight has {} rows but the tokenizer has {} tokens", n_vocab, c.n_vocab);
  h.token_embd = bind_matrix(file, std::string(tensor_names::kTokenEmbd), c.n_embd, n_vocab);
  h.output_norm = load_vector(file, std::string(tensor_names::kOutputNorm), c.n_embd);
  const bool tied = !file.find_tensor(tensor_names::kOutput);
  h.output = tied ? h.token_embd : bind_matrix(file, std::string(tensor_names::kOutput), c.n_embd, n_vocab);
  if (!tied && placement == WeightPlacement::kResident) {
    auto arena = std::make_shared<WeightArena>(WeightArena::padded(matrix_bytes(h.output)));
    place_matrices(file, {&h.output}, *arena);
    h.storage = std::move(arena);
  }
  h.rope_freqs = load_rope_freqs(file, c);
  return h;
}

}  // namespace baton
