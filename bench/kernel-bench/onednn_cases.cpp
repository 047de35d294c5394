// oneDNN's f32 and bf16 matmul against our F32/BF16 gemm on the same data (prefill-sized
// batches), and whether oneDNN keeps a row's result independent of the batch it is in: the
// property "cluster == one process" needs (see ARCHITECTURE.md §7). Built only when CMake finds
// oneDNN and OpenMP (BATON_BENCH_ONEDNN).
#include "bench/kernel-bench/bench_util.h"

#ifdef BATON_BENCH_ONEDNN

#include <omp.h>

#include <cstring>
#include <map>
#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "engine/base/fp16.h"
#include "kernels/core/matmul.h"
#include "kernels/core/thread_pool.h"

namespace baton::bench {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// out [m, n] = src [m, k] × Wᵀ, W rows [n][k]; weights prepacked into oneDNN's preferred layout
// once (as a loader would), activations and output plain.
struct DnnlMatmul {
  DnnlMatmul(dnnl::engine& eng, dnnl::stream& strm, int64_t m, int64_t n, int64_t k, dt type, void* w_plain)
      : eng_(eng), strm_(strm) {
    const dnnl::memory::desc src_md({m, k}, type, tag::ab);
    const dnnl::memory::desc w_any({k, n}, type, tag::any);
    const dnnl::memory::desc dst_md({m, n}, dt::f32, tag::ab);
    pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, w_any, dst_md), eng_);
    prim_ = dnnl::matmul(pd_);
    dnnl::memory w_user({{k, n}, type, tag::ba}, eng_, w_plain);
    weights_ = dnnl::memory(pd_.weights_desc(), eng_);
    dnnl::reorder(w_user, weights_).execute(strm_, w_user, weights_);
    strm_.wait();
  }
  void run(void* src, float* dst) {
    dnnl::memory s(pd_.src_desc(), eng_, src), d(pd_.dst_desc(), eng_, dst);
    prim_.execute(strm_, {{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, d}});
    strm_.wait();
  }

  dnnl::engine& eng_;
  dnnl::stream& strm_;
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul prim_;
  dnnl::memory weights_;
};

std::vector<uint16_t> to_bf16(const std::vector<float>& f) {
  std::vector<uint16_t> out(f.size());
  for (size_t i = 0; i < f.size(); ++i) out[i] = fp32_to_bf16(f[i]);
  return out;
}

}  // namespace

void run_onednn(const BenchOptions& opt, const Peaks& peaks) {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const int64_t n = 4096, k = 4096;
  const auto wf = random_floats(static_cast<size_t>(n * k), 1234);
  const auto wb = to_bf16(wf);
  const int64_t max_tok = std::max<int64_t>(512, opt.batch);
  const auto af = random_floats(static_cast<size_t>(max_tok * k), 98);
  const auto ab = to_bf16(af);
  std::vector<float> out(static_cast<size_t>(max_tok * n)), alone(static_cast<size_t>(n));
  std::map<std::pair<bool, int64_t>, std::vector<float>> first_out;  // by (bf16, m): the first thread count's output

  for (dt type : {dt::f32, dt::bf16}) {
    const bool bf16 = type == dt::bf16;
    const GgmlType ours_type = bf16 ? GgmlType::kBF16 : GgmlType::kF32;
    void* w = bf16 ? const_cast<uint16_t*>(wb.data()) : static_cast<void*>(const_cast<float*>(wf.data()));
    for (int nth : opt.threads) {
      omp_set_num_threads(nth);
      for (int64_t m : {int64_t{1}, int64_t{7}, int64_t{opt.batch}, int64_t{512}}) {
        DnnlMatmul mm(eng, strm, m, n, k, type, w);
        auto src = [&](int64_t row) -> void* {
          return bf16 ? static_cast<void*>(const_cast<uint16_t*>(ab.data() + row * k))
                      : static_cast<void*>(const_cast<float*>(af.data() + row * k));
        };
        mm.run(src(0), out.data());
        const double sec = median_seconds(opt.reps, opt.budget_s, [&](int) { mm.run(src(0), out.data()); });
        // Batch invariance: rows 0, 3 and m-1 of the batch against the same rows computed
        // alone; thread invariance: the whole output against the first thread count's.
        std::string invariant = "rows == alone";
        for (int64_t row : {int64_t{0}, int64_t{3}, m - 1}) {
          if (row >= m) continue;
          DnnlMatmul one(eng, strm, 1, n, k, type, w);
          one.run(src(row), alone.data());
          if (std::memcmp(alone.data(), out.data() + row * n, static_cast<size_t>(n) * sizeof(float)) != 0)
            invariant = "rows != alone";
        }
        auto& first = first_out[{bf16, m}];
        if (first.empty()) {
          first.assign(out.begin(), out.begin() + m * n);
        } else {
          invariant += std::memcmp(first.data(), out.data(), first.size() * sizeof(float)) == 0
                           ? ", == 1st thread count"
                           : ", != 1st thread count";
        }
        const double gflops = 2.0 * static_cast<double>(m * n * k) / sec / 1e9;
        const auto peak = peaks.fma_gflops.find({static_cast<int>(kernels::Isa::kAvx512), nth});
        print_row(Row{"onednn", bf16 ? "bf16" : "f32", fmt::format("{}x{} n_tok={}", n, k, m), "onednn", nth, sec,
                      static_cast<double>(n * k) * (bf16 ? 2 : 4) / sec / 1e9, gflops,
                      peak != peaks.fma_gflops.end() ? 100.0 * gflops / peak->second : NAN, invariant});

        // Ours on the same data, for the side-by-side.
        const kernels::TypeOps* wops = kernels::find_type_ops(ours_type, kernels::active_isa());
        if (!wops || !wops->gemm) continue;
        const kernels::MatmulKernels mk{wops, kernels::find_type_ops(wops->vec_dot_type, kernels::active_isa())};
        kernels::ThreadPool pool(nth);
        kernels::MatmulDriver driver(pool);
        const kernels::MatmulTarget t{kernels::WeightView::dense(ours_type, w, n, k, "bench"), out.data(),
                                      static_cast<size_t>(n), &mk};
        auto ours = [&](int) {
          driver.matmul(std::span<const kernels::MatmulTarget>(&t, 1), af.data(), static_cast<size_t>(k), m);
        };
        ours(0);
        const double sec_ours = median_seconds(opt.reps, opt.budget_s, ours);
        const double gf_ours = 2.0 * static_cast<double>(m * n * k) / sec_ours / 1e9;
        print_row(Row{"ours", bf16 ? "bf16" : "f32", fmt::format("{}x{} n_tok={}", n, k, m),
                      std::string(kernels::isa_name(kernels::active_isa())), nth, sec_ours,
                      static_cast<double>(n * k) * (bf16 ? 2 : 4) / sec_ours / 1e9, gf_ours,
                      peak != peaks.fma_gflops.end() ? 100.0 * gf_ours / peak->second : NAN, "batch-invariant"});
      }
    }
  }
}

}  // namespace baton::bench

#else

#include <fmt/format.h>

namespace baton::bench {
void run_onednn(const BenchOptions&, const Peaks&) {
  fmt::print("# onednn: this build has no oneDNN (CMake did not find dnnl and OpenMP)\n");
}
}  // namespace baton::bench

#endif
