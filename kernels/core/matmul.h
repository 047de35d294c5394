// The matmul driver: out = act × Wᵀ for a weight of any type with kernels, on a thread pool,
// plus get_rows (embedding lookup). It owns the scratch for activations converted to the
// weight type's vec_dot_type, reused from call to call.
//
// Exactness: each output element is one GemmFn reduction over k, whose result by contract does
// not depend on which other rows or tokens share the call; activation rows are converted one
// row at a time. So every element is bitwise identical for any thread count, any n_tok and any
// batch composition (the "cluster == one process" rule), given the token's RowOrder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "engine/base/aligned_buffer.h"
#include "engine/base/ggml_type.h"
#include "kernels/core/isa.h"
#include "kernels/core/thread_pool.h"
#include "kernels/core/type_ops.h"

namespace baton::kernels {

// A weight matrix W [n_rows, k] of one ggml type, not owned (usually a view into the mmap).
// Row r starts at data + r * row_bytes.
struct WeightView {
  GgmlType type = GgmlType::kF32;
  const void* data = nullptr;
  int64_t n_rows = 0;
  int64_t k = 0;  // elements per row (GGUF ne[0])
  size_t row_bytes = 0;
  std::string_view name;  // the tensor name, for error messages
  // Rows [0, repacked_rows) are stored in the type's load-time layout (TypeOps::repack, groups
  // of repack_rows rows); the rest are plain rows. 0: all plain.
  int64_t repacked_rows = 0;

  // Dense rows: row_bytes = k / block_size * block_bytes. Throws baton::FormatError when k is
  // not a multiple of the type's block size.
  static WeightView dense(GgmlType type, const void* data, int64_t n_rows, int64_t k, std::string_view name);
};

// The kernels one matmul uses: the weight type's ops (gemm, to_float) and the ops of its
// vec_dot_type (from_float, to convert activations).
struct MatmulKernels {
  const TypeOps* weight = nullptr;
  const TypeOps* activation = nullptr;
};

// For `type` at `isa`; throws baton::UnsupportedError naming the tensor when this build has no
// gemm for the type or no quantizer for its vec_dot_type.
MatmulKernels require_matmul_kernels(GgmlType type, Isa isa, std::string_view tensor_name);

// One weight of a (possibly fused) matmul: out[t * out_stride + r] for t < n_tok, r < w.n_rows.
struct MatmulTarget {
  WeightView w;
  float* out = nullptr;
  size_t out_stride = 0;                   // in floats; >= w.n_rows
  const MatmulKernels* kernels = nullptr;  // nullptr: require_matmul_kernels(w.type, active_isa())
};

// How the driver cuts work (speed only: results never depend on it).
struct MatmulTuning {
  // Tokens per gemm call in batches: the kernels reuse each weight block across the tile (128
  // measured best: docs/BENCHMARKS.md, Kernel notes).
  int64_t token_tile = 128;
  int64_t chunks_per_thread = 8;  // output-row chunks per thread, for load balance
};

// Which of llama.cpp's matmul kernels a row gets. llama.cpp decides by the number of rows in
// the whole micro-batch; we decide per sequence (its rows in this pass), so that a sequence's
// result never depends on the other sequences sharing the pass (docs/NUMERICS.md).
enum class RowOrder : uint8_t {
  kBatch = 0,    // TypeOps::gemm (e.g. tinyBLAS for the float types)
  kSingle = 1,   // the only row of its sequence: gemm_single where the type has one, else gemm
  kGrouped = 2,  // in a full group of 4 rows of its sequence: gemm_grouped if any, else gemm
};

// out[i] for the tokens of a pass: a sequence with m rows gets kSingle if m == 1; otherwise its
// j-th row (in batch order) gets kGrouped if j < m - m % 4, else kBatch.
void row_orders(std::span<const uint64_t> seq_ids, std::vector<RowOrder>& out);

// Runs matmuls on a pool. Not thread-safe (one driver per pool user); the pool may be shared.
class MatmulDriver {
 public:
  explicit MatmulDriver(ThreadPool& pool, MatmulTuning tuning = {}) : pool_(pool), tuning_(tuning) {}

  // orders: one RowOrder per token (row_orders()); empty: the tokens are taken as one sequence.

  // out [n_tok, w.n_rows] = act [n_tok, w.k] × Wᵀ, dense rows on both sides.
  void matmul(const WeightView& w, const float* act, int64_t n_tok, float* out, std::span<const RowOrder> orders = {});

  // Several weights sharing one input (q/k/v, gate/up): the input is converted once per
  // vec_dot_type and all outputs are computed in one pool run. act rows are act_stride floats
  // apart. Throws baton::Error on shape mismatches (naming the tensors) and
  // baton::UnsupportedError for types without kernels.
  void matmul(std::span<const MatmulTarget> targets, const float* act, size_t act_stride, int64_t n_tok,
              std::span<const RowOrder> orders = {});

  ThreadPool& pool() { return pool_; }

 private:
  struct ActBuffer {
    GgmlType type;
    AlignedBuffer data;
  };
  // The scratch for activations in `type`, at least `bytes` long.
  void* act_scratch(GgmlType type, size_t bytes);

  ThreadPool& pool_;
  MatmulTuning tuning_;
  std::vector<ActBuffer> act_buffers_;
  std::vector<MatmulKernels> resolved_;  // per target of the current call
  std::vector<const void*> converted_;   // per target: its activations in vec_dot_type
  std::vector<size_t> converted_stride_;
  std::vector<RowOrder> default_orders_;
};

// Embedding lookup: out[i * out_stride ...] = row ids[i] of `table` dequantized to f32
// (table.k floats each). Throws baton::Error when an id is outside [0, n_rows), naming the
// tensor, and baton::UnsupportedError when the type has no to_float. ops: the table type's
// kernels (nullptr: find_type_ops(table.type, active_isa())).
void get_rows(const WeightView& table, std::span<const int32_t> ids, float* out, size_t out_stride,
              const TypeOps* ops = nullptr);

}  // namespace baton::kernels
