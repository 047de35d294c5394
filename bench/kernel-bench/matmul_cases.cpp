// Matmul cases through the real driver: matvec (n_tok = 1, weights streamed from DRAM: the
// copies rotated over total more than 4× the LLC) reported in GB/s and as a percentage of a
// plain read-sum of the same copies measured alongside (the matvec's speed of light), and batched matmul (n_tok =
// --batch) in GFLOP/s against the measured FMA peak.
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <memory>

#include "bench/kernel-bench/bench_util.h"
#include "engine/base/aligned_buffer.h"
#include "engine/model/weight_arena.h"
#include "kernels/core/matmul.h"
#include "kernels/core/thread_pool.h"

namespace baton::bench {
namespace {

using kernels::Isa;

struct Shape {
  int64_t n_rows, k;
};
const Shape kShapes[] = {{4096, 4096}, {11008, 4096}};
// matvec also runs TinyLlama's layer shapes (attn_q/attn_output, ffn_gate/up, ffn_down).
const Shape kMatvecShapes[] = {{4096, 4096}, {11008, 4096}, {2048, 2048}, {5632, 2048}, {2048, 5632}};

// Every type to run at `isa`: the requested ones, or all with a gemm and a quantizer.
std::vector<GgmlType> bench_types(const BenchOptions& opt, Isa isa) {
  std::vector<GgmlType> out;
  auto usable = [&](GgmlType t) {
    const kernels::TypeOps* ops = kernels::find_type_ops(t, isa);
    return ops && ops->gemm && ops->from_float;
  };
  if (!opt.types.empty()) {
    for (GgmlType t : opt.types)
      if (usable(t)) out.push_back(t);
    return out;
  }
  for (uint32_t id = 0; id < 64; ++id)
    if (auto info = find_ggml_type(id); info && usable(info->type)) out.push_back(info->type);
  return out;
}

// One weight copy in the memory the engine gives weights (WeightArena: 2 MiB pages where the
// kernel allows), so the matvec and its read-sum see the TLB behaviour of a real decode.
class WeightMemory {
 public:
  explicit WeightMemory(size_t bytes) : arena_(std::make_unique<WeightArena>(bytes)), data_(arena_->allocate(bytes)) {}
  void* data() { return data_; }
  const void* data() const { return data_; }
  template <class T>
  T* as() {
    return reinterpret_cast<T*>(data_);
  }

 private:
  std::unique_ptr<WeightArena> arena_;
  uint8_t* data_;
};

// Weights of one type and shape, quantized once (on the pool) and copied `copies` times.
struct WeightCopies {
  std::vector<WeightMemory> copies;
  size_t bytes = 0;
  size_t row_bytes = 0;
};

// The copies in the type's load-time layout (TypeOps::repack of `ops`), rows in whole groups.
WeightCopies repacked_copies(const WeightCopies& plain, const kernels::TypeOps& ops, const Shape& s) {
  WeightCopies w;
  w.bytes = plain.bytes;
  w.row_bytes = plain.row_bytes;
  for (const auto& c : plain.copies) {
    w.copies.emplace_back(w.bytes);
    ops.repack(c.data(), w.copies.back().data(), s.n_rows, s.k);
  }
  return w;
}

WeightCopies make_weights(GgmlType type, const Shape& s, int copies, kernels::ThreadPool& pool) {
  const kernels::TypeOps* ops = kernels::find_type_ops(type, kernels::active_isa());
  const GgmlTypeInfo& info = require_ggml_type(type);
  WeightCopies w;
  w.row_bytes = static_cast<size_t>(s.k / info.block_size) * info.block_bytes;
  w.bytes = w.row_bytes * static_cast<size_t>(s.n_rows);
  const auto f = random_floats(static_cast<size_t>(s.n_rows * s.k), 1234);
  w.copies.emplace_back(w.bytes);
  auto* dst = w.copies[0].as<char>();
  pool.run([&](int ith, int nth) {
    for (int64_t r = ith; r < s.n_rows; r += nth)
      ops->from_float(f.data() + r * s.k, dst + static_cast<size_t>(r) * w.row_bytes, s.k);
  });
  for (int c = 1; c < copies; ++c) {
    w.copies.emplace_back(w.bytes);
    std::memcpy(w.copies.back().data(), dst, w.bytes);
  }
  return w;
}

}  // namespace

void run_matvec(const BenchOptions& opt, const Peaks& peaks) {
  kernels::ThreadPool setup_pool(static_cast<int>(std::thread::hardware_concurrency()));
  const auto act = random_floats(static_cast<size_t>(kShapes[1].k), 99);
  std::vector<float> out(static_cast<size_t>(kShapes[1].n_rows));
  // The union of types over the ISAs, so each type's weights are built once.
  std::vector<GgmlType> types;
  for (Isa isa : opt.isas)
    for (GgmlType t : bench_types(opt, isa))
      if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);

  for (GgmlType type : types) {
    for (const Shape& s : kMatvecShapes) {
      const GgmlTypeInfo& info = require_ggml_type(type);
      const size_t bytes = static_cast<size_t>(s.k / info.block_size) * info.block_bytes * s.n_rows;
      const int copies = std::max(2, static_cast<int>(std::ceil(4.0 * peaks.llc_bytes / bytes)) + 1);
      WeightCopies plain = make_weights(type, s, copies, setup_pool);
      WeightCopies packed;
      for (Isa isa : opt.isas) {
        const kernels::TypeOps* wops = kernels::find_type_ops(type, isa);
        if (!wops || !wops->gemm) continue;
        const kernels::MatmulKernels mk{wops, kernels::find_type_ops(wops->vec_dot_type, isa)};
        const bool can_repack = wops->repack_rows > 0 && s.n_rows % wops->repack_rows == 0;
        if (can_repack && packed.copies.empty()) packed = repacked_copies(plain, *wops, s);
        for (int layout = 0; layout < (can_repack ? 2 : 1); ++layout)
          for (int nth : opt.threads) {
            const WeightCopies& w = layout == 0 ? plain : packed;
            const int64_t repacked_rows = layout == 0 ? 0 : s.n_rows;
            kernels::ThreadPool pool(nth);
            kernels::MatmulDriver driver(pool);
            auto run_once = [&](int rep) {
              const kernels::MatmulTarget t{
                  kernels::WeightView{type, w.copies[static_cast<size_t>(rep) % w.copies.size()].data(), s.n_rows, s.k,
                                      w.row_bytes, "bench", repacked_rows},
                  out.data(), static_cast<size_t>(s.n_rows), &mk};
              driver.matmul(std::span<const kernels::MatmulTarget>(&t, 1), act.data(), static_cast<size_t>(s.k), 1);
            };
            run_once(0);  // warm-up (scratch, page tables)
            // The speed of light: reading the same copies with a plain sum, interleaved with the
            // matvecs so that both see the same machine load.
            // The read-sum takes the copy half the ring away from the matvec's: reading copy rep + 1
            // right before the matvec of rep + 1 left it in the LLC, which inflated the matvec's
            // figure above 100 % for weights smaller than the LLC.
            volatile uint64_t sink = 0;
            auto read_once = [&](int rep) {
              const size_t n = w.copies.size();
              sink = sink + read_sum_bytes(w.copies[(static_cast<size_t>(rep) + n / 2) % n].data(), w.bytes, pool);
            };
            const InterleavedMedians m =
                interleaved_medians(std::max(opt.reps, copies), opt.budget_s, run_once, read_once);
            const double sec = m.wall_a, sec_read = m.wall_b;
            const double gbs = static_cast<double>(w.bytes) / sec / 1e9;
            // CPU time per thread: what the matvec costs when the machine is shared (the wall
            // time then includes time slices given to other processes).
            const double cpu = m.cpu_a / nth, cpu_read = m.cpu_b / nth;
            print_row(
                Row{layout == 0 ? "matvec" : "matvec repacked", std::string(info.name),
                    fmt::format("{}x{}", s.n_rows, s.k), std::string(kernels::isa_name(isa)), nth, sec, gbs,
                    2.0 * static_cast<double>(s.n_rows * s.k) / sec / 1e9, 100.0 * sec_read / sec,
                    fmt::format("{} copies; read-sum {:.2f} GB/s; by CPU time: {:.1f} us, {:.2f} GB/s, {:.0f}% of "
                                "read-sum {:.2f} GB/s",
                                copies, static_cast<double>(w.bytes) / sec_read / 1e9, cpu * 1e6,
                                static_cast<double>(w.bytes) / cpu / 1e9, 100.0 * cpu_read / cpu,
                                static_cast<double>(w.bytes) / cpu_read / 1e9)});
          }
      }
    }
  }
}

void run_batch(const BenchOptions& opt, const Peaks& peaks) {
  kernels::ThreadPool setup_pool(static_cast<int>(std::thread::hardware_concurrency()));
  const Shape s = kShapes[0];
  const int64_t n_tok = opt.batch;
  const auto act = random_floats(static_cast<size_t>(n_tok * s.k), 98);
  std::vector<float> out(static_cast<size_t>(n_tok * s.n_rows));
  std::vector<GgmlType> types;
  for (Isa isa : opt.isas)
    for (GgmlType t : bench_types(opt, isa))
      if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);

  for (GgmlType type : types) {
    WeightCopies plain = make_weights(type, s, 1, setup_pool);
    WeightCopies packed;
    for (Isa isa : opt.isas) {
      const kernels::TypeOps* wops = kernels::find_type_ops(type, isa);
      if (!wops || !wops->gemm) continue;
      const kernels::MatmulKernels mk{wops, kernels::find_type_ops(wops->vec_dot_type, isa)};
      const bool can_repack = wops->repack_rows > 0 && s.n_rows % wops->repack_rows == 0;
      if (can_repack && packed.copies.empty()) packed = repacked_copies(plain, *wops, s);
      std::vector<int64_t> tiles = opt.token_tiles;
      if (tiles.empty()) tiles.push_back(kernels::MatmulTuning{}.token_tile);
      for (int layout = 0; layout < (can_repack ? 2 : 1); ++layout)
        for (int nth : opt.threads)
          for (int64_t tile : tiles) {
            const WeightCopies& w = layout == 0 ? plain : packed;
            kernels::ThreadPool pool(nth);
            kernels::MatmulDriver driver(pool, kernels::MatmulTuning{tile, kernels::MatmulTuning{}.chunks_per_thread});
            const kernels::MatmulTarget t{kernels::WeightView{type, w.copies[0].data(), s.n_rows, s.k, w.row_bytes,
                                                              "bench", layout == 0 ? 0 : s.n_rows},
                                          out.data(), static_cast<size_t>(s.n_rows), &mk};
            auto run_once = [&](int) {
              driver.matmul(std::span<const kernels::MatmulTarget>(&t, 1), act.data(), static_cast<size_t>(s.k), n_tok);
            };
            run_once(0);
            const double sec = median_seconds(opt.reps, opt.budget_s, run_once);
            const double gflops = 2.0 * static_cast<double>(s.n_rows * s.k * n_tok) / sec / 1e9;
            // Weights dotted with int8 activations (Q8_0 / Q8_K) are held to the int8 dot peak.
            const bool int8 = wops->vec_dot_type == GgmlType::kQ8_0 || wops->vec_dot_type == GgmlType::kQ8_K;
            const auto& peak_map = int8 ? peaks.dot_gops : peaks.fma_gflops;
            const auto peak = peak_map.find({static_cast<int>(isa), nth});
            print_row(Row{layout == 0 ? "matmul" : "matmul repacked", std::string(require_ggml_type(type).name),
                          fmt::format("{}x{} n_tok={} tile={}", s.n_rows, s.k, n_tok, tile),
                          std::string(kernels::isa_name(isa)), nth, sec, static_cast<double>(w.bytes) / sec / 1e9,
                          gflops, peak != peak_map.end() ? 100.0 * gflops / peak->second : NAN,
                          int8 ? "% of int8 dot peak" : "% of f32 FMA peak"});
          }
    }
  }
}

}  // namespace baton::bench
