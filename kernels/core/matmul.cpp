#include "kernels/core/matmul.h"

#include <algorithm>
#include <atomic>

#include "engine/base/error.h"
#include "kernels/core/scratch.h"

namespace baton::kernels {
namespace {

// Output rows per chunk are a multiple of this (kernels process rows in small groups).
constexpr int64_t kRowGranule = 16;
// The last kTailChunksPerThread * n_threads row chunks of a matmul are cut kTailSplit times finer.
constexpr int64_t kTailChunksPerThread = 1;
constexpr int64_t kTailSplit = 4;

struct RowChunk {
  size_t target;
  int64_t r0, n_rows;
};

size_t dense_row_bytes(GgmlType type, int64_t k, std::string_view name) {
  const GgmlTypeInfo& info = require_ggml_type(type);
  if (k <= 0 || k % info.block_size != 0)
    fail<FormatError>("tensor {}: row length {} is not a positive multiple of the {} block size {}", name, k, info.name,
                      info.block_size);
  return static_cast<size_t>(k / info.block_size) * info.block_bytes;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

WeightView WeightView::dense(GgmlType type, const void* data, int64_t n_rows, int64_t k, std::string_view name) {
  return WeightView{type, data, n_rows, k, dense_row_bytes(type, k, name), name};
}

MatmulKernels require_matmul_kernels(GgmlType type, Isa isa, std::string_view tensor_name) {
  MatmulKernels kernels;
  kernels.weight = find_type_ops(type, isa);
  if (!kernels.weight || !kernels.weight->gemm)
    fail<UnsupportedError>("unsupported type {} for tensor {}: this build has no matmul kernel for it",
                           ggml_type_name(type), tensor_name);
  kernels.activation = find_type_ops(kernels.weight->vec_dot_type, isa);
  if (kernels.weight->vec_dot_type != GgmlType::kF32 && (!kernels.activation || !kernels.activation->from_float))
    fail<UnsupportedError>("unsupported type {} for tensor {}: no quantizer for its activation type {}",
                           ggml_type_name(type), tensor_name, ggml_type_name(kernels.weight->vec_dot_type));
  return kernels;
}

void* MatmulDriver::act_scratch(GgmlType type, size_t bytes) {
  for (auto& b : act_buffers_) {
    if (b.type == type) {
      b.data.resize(bytes);
      return b.data.data();
    }
  }
  act_buffers_.push_back(ActBuffer{type, AlignedBuffer(bytes)});
  return act_buffers_.back().data.data();
}

void row_orders(std::span<const uint64_t> seq_ids, std::vector<RowOrder>& out) {
  // (sequence, rows) in order of first appearance; a pass has few sequences
  std::vector<std::pair<uint64_t, int64_t>> counts;
  auto slot = [&](uint64_t s) {
    for (size_t i = 0; i < counts.size(); ++i)
      if (counts[i].first == s) return i;
    counts.push_back({s, 0});
    return counts.size() - 1;
  };
  for (uint64_t s : seq_ids) ++counts[slot(s)].second;
  std::vector<int64_t> seen(counts.size(), 0);
  out.resize(seq_ids.size());
  for (size_t t = 0; t < seq_ids.size(); ++t) {
    const size_t i = slot(seq_ids[t]);
    const int64_t m = counts[i].second, j = seen[i]++;
    out[t] = m == 1 ? RowOrder::kSingle : j < m - m % 4 ? RowOrder::kGrouped : RowOrder::kBatch;
  }
}

void MatmulDriver::matmul(const WeightView& w, const float* act, int64_t n_tok, float* out,
                          std::span<const RowOrder> orders) {
  const MatmulTarget target{w, out, static_cast<size_t>(w.n_rows), nullptr};
  matmul(std::span<const MatmulTarget>(&target, 1), act, static_cast<size_t>(w.k), n_tok, orders);
}

void MatmulDriver::matmul(std::span<const MatmulTarget> targets, const float* act, size_t act_stride, int64_t n_tok,
                          std::span<const RowOrder> orders) {
  if (targets.empty() || n_tok <= 0) return;
  const int64_t k = targets[0].w.k;
  if (act_stride < static_cast<size_t>(k))
    fail("matmul {}: activation row stride {} is shorter than k = {}", targets[0].w.name, act_stride, k);
  if (!orders.empty() && orders.size() != static_cast<size_t>(n_tok))
    fail("matmul {}: {} row orders for {} tokens", targets[0].w.name, orders.size(), n_tok);
  if (orders.empty()) {  // one sequence
    default_orders_.resize(static_cast<size_t>(n_tok));
    const int64_t grouped = n_tok == 1 ? 0 : n_tok - n_tok % 4;
    for (int64_t t = 0; t < n_tok; ++t)
      default_orders_[t] = n_tok == 1 ? RowOrder::kSingle : t < grouped ? RowOrder::kGrouped : RowOrder::kBatch;
    orders = default_orders_;
  }

  // Validate every target and resolve its kernels (cheap: a few comparisons and a switch).
  resolved_.resize(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    const MatmulTarget& t = targets[i];
    if (t.w.k != k)
      fail("fused matmul: tensor {} has k = {} but tensor {} has k = {}", t.w.name, t.w.k, targets[0].w.name, k);
    const size_t need = dense_row_bytes(t.w.type, k, t.w.name);
    if (t.w.row_bytes < need)
      fail("tensor {}: row stride {} bytes is shorter than one {} row of {} elements ({} bytes)", t.w.name,
           t.w.row_bytes, ggml_type_name(t.w.type), k, need);
    if (t.w.n_rows < 0 || (t.w.n_rows > 0 && (!t.w.data || !t.out)))
      fail("matmul {}: null weight or output pointer", t.w.name);
    if (t.out_stride < static_cast<size_t>(t.w.n_rows))
      fail("matmul {}: output row stride {} is shorter than n_rows = {}", t.w.name, t.out_stride, t.w.n_rows);
    resolved_[i] = t.kernels ? *t.kernels : require_matmul_kernels(t.w.type, active_isa(), t.w.name);
    if (!resolved_[i].weight || !resolved_[i].weight->gemm)
      fail<UnsupportedError>("matmul {}: no gemm kernel for type {}", t.w.name, ggml_type_name(t.w.type));
    dense_row_bytes(resolved_[i].weight->vec_dot_type, k, t.w.name);  // k fits the activation blocks too
    if (t.w.repacked_rows != 0) {
      const TypeOps& ops = *resolved_[i].weight;
      if (!ops.has_repacked_layout() || t.w.repacked_rows < 0 || t.w.repacked_rows > t.w.n_rows ||
          t.w.repacked_rows % ops.repack_rows != 0 || kRowGranule % ops.repack_rows != 0 || t.w.row_bytes != need)
        fail("matmul {}: {} repacked rows of {} (row stride {}) do not fit this ISA's {} kernels (groups of {})",
             t.w.name, t.w.repacked_rows, t.w.n_rows, t.w.row_bytes, ggml_type_name(t.w.type), ops.repack_rows);
    }
  }

  // Convert the activations once per distinct vec_dot_type (F32 is used as it is).
  struct Conversion {
    FromFloatFn from_float;
    void* dst;
    size_t row_bytes;
  };
  Conversion conv[4];
  int n_conv = 0;
  converted_.assign(targets.size(), nullptr);
  converted_stride_.assign(targets.size(), 0);
  for (size_t i = 0; i < targets.size(); ++i) {
    const GgmlType vdt = resolved_[i].weight->vec_dot_type;
    if (vdt == GgmlType::kF32) {
      converted_[i] = act;
      converted_stride_[i] = act_stride * sizeof(float);
      continue;
    }
    for (size_t j = 0; j < i; ++j) {
      if (resolved_[j].weight->vec_dot_type == vdt) {
        converted_[i] = converted_[j];
        converted_stride_[i] = converted_stride_[j];
        break;
      }
    }
    if (converted_[i]) continue;
    if (!resolved_[i].activation || !resolved_[i].activation->from_float)
      fail<UnsupportedError>("matmul {}: no quantizer for activation type {}", targets[i].w.name, ggml_type_name(vdt));
    if (n_conv == 4) fail("fused matmul: more than 4 distinct activation types in one call");
    const size_t row_bytes = dense_row_bytes(vdt, k, targets[i].w.name);
    void* dst = act_scratch(vdt, row_bytes * static_cast<size_t>(n_tok));
    conv[n_conv++] = Conversion{resolved_[i].activation->from_float, dst, row_bytes};
    converted_[i] = dst;
    converted_stride_[i] = row_bytes;
  }
  if (n_conv > 0) {
    auto convert = [&](int ith, int nth) {
      for (int64_t t = ith; t < n_tok; t += nth)
        for (int c = 0; c < n_conv; ++c)
          conv[c].from_float(act + static_cast<size_t>(t) * act_stride,
                             static_cast<char*>(conv[c].dst) + static_cast<size_t>(t) * conv[c].row_bytes, k);
    };
    // Split by token even when small: with the pool's polling a job costs ~1 us, less than one
    // token's conversion, and the other thread would only wait.
    if (n_tok == 1) convert(0, 1);
    else pool_.run(convert);
  }

  // Chunks: per target, row blocks × token tiles (token tile innermost so that threads working
  // on neighbouring chunks share the weight block in cache).
  const int nth = pool_.n_threads();
  const int64_t tok_tile = std::min(n_tok, std::max<int64_t>(1, tuning_.token_tile));
  const int64_t n_tiles = ceil_div(n_tok, tok_tile);
  int64_t total_rows = 0;
  for (const auto& t : targets) total_rows += t.w.n_rows;
  const int64_t want_chunks = std::max<int64_t>(1, nth * std::max<int64_t>(1, tuning_.chunks_per_thread) / n_tiles);
  const int64_t rows_per_chunk =
      std::max(kRowGranule, ceil_div(ceil_div(total_rows, want_chunks), kRowGranule) * kRowGranule);

  // Row chunks of rows_per_chunk, except that the last ones are cut 4x finer: the threads reach
  // the end of a matmul within a small chunk of each other instead of up to a whole one apart.
  const int64_t tail_rows = kTailChunksPerThread * nth * rows_per_chunk;
  const int64_t fine_rows =
      std::max(kRowGranule, ceil_div(ceil_div(rows_per_chunk, kTailSplit), kRowGranule) * kRowGranule);
  thread_local std::vector<RowChunk> row_chunks;
  row_chunks.clear();
  int64_t rows_before = 0;  // over all targets, for the tail test
  for (size_t ti = 0; ti < targets.size(); ++ti) {
    const int64_t n_rows = targets[ti].w.n_rows;
    for (int64_t r0 = 0; r0 < n_rows;) {
      const bool in_tail = total_rows - (rows_before + r0) <= tail_rows;
      const int64_t nr = std::min(in_tail ? fine_rows : rows_per_chunk, n_rows - r0);
      row_chunks.push_back({ti, r0, nr});
      r0 += nr;
    }
    rows_before += n_rows;
  }
  const int64_t n_chunks = static_cast<int64_t>(row_chunks.size()) * n_tiles;
  if (n_chunks == 0) return;

  std::atomic<int64_t> next_chunk{0};
  // One id per matmul: kernels may keep what they prepared from the activations across its chunks.
  static std::atomic<uint64_t> matmul_ids{0};
  const uint64_t matmul_id = matmul_ids.fetch_add(1, std::memory_order_relaxed) + 1;
  const RowChunk* chunks = row_chunks.data();
  auto compute = [&](int, int) {
    const detail::MatmulScope scope(matmul_id);
    for (int64_t c = next_chunk.fetch_add(1, std::memory_order_relaxed); c < n_chunks;
         c = next_chunk.fetch_add(1, std::memory_order_relaxed)) {
      const RowChunk& rc = chunks[c / n_tiles];
      const size_t ti = rc.target;
      const MatmulTarget& t = targets[ti];
      const int64_t r0 = rc.r0, nr = rc.n_rows;
      const int64_t t0 = (c % n_tiles) * tok_tile;
      const int64_t nt = std::min(tok_tile, n_tok - t0);
      const TypeOps& ops = *resolved_[ti].weight;
      const bool all_gemm = !ops.gemm_single && !ops.gemm_grouped;
      const bool all_single = ops.gemm_single && ops.gemm_rows_multiple > 1 && t.w.n_rows % ops.gemm_rows_multiple != 0;
      auto kernel = [&](int64_t tok) {
        if (all_gemm) return ops.gemm;
        if (all_single) return ops.gemm_single;
        switch (orders[static_cast<size_t>(tok)]) {
          case RowOrder::kSingle: return ops.gemm_single ? ops.gemm_single : ops.gemm;
          case RowOrder::kGrouped: return ops.gemm_grouped ? ops.gemm_grouped : ops.gemm;
          case RowOrder::kBatch: break;
        }
        return ops.gemm;
      };
      // Rows [ra, ra + n) of one layout: runs of tokens with the same kernel. Repacked groups go
      // to gemm_repacked / gemm_grouped_repacked where the kernel is gemm / gemm_grouped (the same
      // orders), else through a plain copy.
      auto run_rows = [&](int64_t ra, int64_t n, bool repacked) {
        const char* w = static_cast<const char*>(t.w.data) + static_cast<size_t>(ra) * t.w.row_bytes;
        const char* plain = repacked ? nullptr : w;
        for (int64_t ta = t0; ta < t0 + nt;) {
          const GemmFn g = kernel(ta);
          int64_t tb = ta + 1;
          while (tb < t0 + nt && kernel(tb) == g) ++tb;
          GemmFn run = g;
          const char* wg = plain;
          if (repacked && g == ops.gemm) {
            run = ops.gemm_repacked;
            wg = w;
          } else if (repacked && g == ops.gemm_grouped && ops.gemm_grouped_repacked) {
            run = ops.gemm_grouped_repacked;
            wg = w;
          } else if (!wg) {
            thread_local AlignedBuffer unpacked;
            unpacked.resize(static_cast<size_t>(n) * t.w.row_bytes);
            ops.unrepack(w, unpacked.data(), n, k);
            wg = plain = unpacked.as<char>();
          }
          run(k, wg, t.w.row_bytes, n,
              static_cast<const char*>(converted_[ti]) + static_cast<size_t>(ta) * converted_stride_[ti],
              converted_stride_[ti], tb - ta, t.out + static_cast<size_t>(ta) * t.out_stride + ra, t.out_stride);
          ta = tb;
        }
      };
      // chunks start on group bounds (rows_per_chunk is a multiple of kRowGranule)
      const int64_t n_rep = std::clamp<int64_t>(t.w.repacked_rows - r0, 0, nr);
      if (n_rep > 0) run_rows(r0, n_rep, true);
      if (n_rep < nr) run_rows(r0 + n_rep, nr - n_rep, false);
    }
  };
  pool_.run(compute, static_cast<int>(std::min<int64_t>(nth, n_chunks)));
}

void get_rows(const WeightView& table, std::span<const int32_t> ids, float* out, size_t out_stride,
              const TypeOps* ops) {
  if (!ops) ops = find_type_ops(table.type, active_isa());
  if (!ops || !ops->to_float)
    fail<UnsupportedError>("get_rows {}: no dequantizer for type {}", table.name, ggml_type_name(table.type));
  const size_t need = dense_row_bytes(table.type, table.k, table.name);
  if (table.row_bytes < need)
    fail("tensor {}: row stride {} bytes is shorter than one row ({} bytes)", table.name, table.row_bytes, need);
  if (out_stride < static_cast<size_t>(table.k))
    fail("get_rows {}: output row stride {} is shorter than k = {}", table.name, out_stride, table.k);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= table.n_rows)
      fail("get_rows {}: row id {} at position {} is outside [0, {})", table.name, ids[i], i, table.n_rows);
  }
  for (size_t i = 0; i < ids.size(); ++i)
    ops->to_float(static_cast<const char*>(table.data) + static_cast<size_t>(ids[i]) * table.row_bytes,
                  out + i * out_stride, table.k);
}

}  // namespace baton::kernels
