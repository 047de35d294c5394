// The decode rows of a continuous batch: n tokens in one pass, each the only row of its own
// sequence (RowOrder::kSingle). Each row's output must be bitwise the one it gets alone
// (n_tok = 1), whatever the batch size (2..16: the gemm dispatch switches kernels by n_tok),
// its position in the batch and the ISA — for the K-quant types of Q4_K_M models (Q4_K, Q6_K)
// and Q5_K, through the real MatmulDriver on 2 threads.
#include <catch2/catch.hpp>

#include <utility>
#include <vector>

#include "kernels/kquant/qx_K_x16.h"
#include "kernels/core/matmul.h"
#include "test_kquant_util.h"

namespace {

using namespace baton::test::kq;
using baton::GgmlType;
namespace kernels = baton::kernels;

constexpr int64_t kPool = 16;  // distinct activation rows

// out [n_tok, n_rows] for activation rows ids (each its own sequence) at `isa`.
std::vector<float> run_single_rows(kernels::MatmulDriver& driver, const kernels::WeightView& w,
                                   const kernels::MatmulKernels& ks, const std::vector<float>& acts,
                                   const std::vector<int64_t>& ids) {
  const auto n_tok = static_cast<int64_t>(ids.size());
  std::vector<float> act(static_cast<size_t>(n_tok * w.k));
  for (int64_t t = 0; t < n_tok; ++t) std::copy_n(acts.begin() + ids[t] * w.k, w.k, act.begin() + t * w.k);
  std::vector<float> out(static_cast<size_t>(n_tok * w.n_rows), -1.0f);
  const std::vector<kernels::RowOrder> orders(static_cast<size_t>(n_tok), kernels::RowOrder::kSingle);
  const kernels::MatmulTarget target{w, out.data(), static_cast<size_t>(w.n_rows), &ks};
  driver.matmul(std::span<const kernels::MatmulTarget>(&target, 1), act.data(), static_cast<size_t>(w.k), n_tok,
                orders);
  return out;
}

}  // namespace

TEST_CASE("K-quant single rows give the same bits alone and in batches of 2..16 single-row tokens, on every ISA") {
  const int64_t k = 768, n_rows = 37;  // 37: partial row groups in every kernel
  // Activations: normal rows plus two at the extremes (+-127 after quantization).
  auto acts = random_normal(static_cast<size_t>(kPool * k), 4711);
  for (int64_t i = 0; i < k; ++i) {
    acts[static_cast<size_t>(3 * k + i)] = (i / 3) % 2 ? 100.0f : -100.0f;
    acts[static_cast<size_t>(11 * k + i)] = i % 2 ? 50.0f : -100.0f;
  }
  kernels::ThreadPool pool(2);
  kernels::MatmulDriver driver(pool);
  std::vector<kernels::Isa> isas;
  for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2, kernels::Isa::kAvxVnni, kernels::Isa::kAvx512})
    if (cpu_has(isa)) isas.push_back(isa);

  for (const KType& kt : all_ktypes()) {
    if (kt.type != GgmlType::kQ4_K && kt.type != GgmlType::kQ5_K && kt.type != GgmlType::kQ6_K) continue;
    for (bool quantized : {true, false}) {
      // Weights: quantized normal data, or random bytes (every quant and scale pattern).
      Rows w(n_rows, static_cast<size_t>(k / kernels::kQK_K) * kt.block_bytes, 0, 0);
      std::mt19937 gen(99);
      const auto x = random_normal(static_cast<size_t>(n_rows * k), 5, 0.05f);
      for (int64_t r = 0; r < n_rows; ++r) {
        if (quantized) kt.quantize(x.data() + r * k, w.row(r), k);
        else fill_random_blocks(kt, w.row(r), k / kernels::kQK_K, gen, 0.01f);
      }
      const auto view = kernels::WeightView::dense(kt.type, w.row(0), n_rows, k, "test.weight");

      std::vector<float> first_isa;  // row alone, per pool row, on the first ISA
      for (kernels::Isa isa : isas) {
        INFO(baton::ggml_type_name(kt.type)
             << " " << kernels::isa_name(isa) << (quantized ? " quantized" : " random bytes"));
        const auto ks = kernels::require_matmul_kernels(kt.type, isa, "test.weight");
        std::vector<float> alone;
        for (int64_t i = 0; i < kPool; ++i) {
          const auto one = run_single_rows(driver, view, ks, acts, {i});
          alone.insert(alone.end(), one.begin(), one.end());
        }
        if (first_isa.empty()) first_isa = alone;
        int64_t isa_mismatches = 0;
        for (size_t i = 0; i < alone.size(); ++i) isa_mismatches += !same_bits(alone[i], first_isa[i]);
        CHECK(isa_mismatches == 0);

        for (int64_t n = 2; n <= 16; ++n) {
          for (int64_t start : {int64_t{0}, int64_t{5}, kPool - 1}) {
            std::vector<int64_t> ids;
            for (int64_t j = 0; j < n; ++j) ids.push_back((start + 7 * j) % kPool);
            const auto got = run_single_rows(driver, view, ks, acts, ids);
            int64_t mismatches = 0;
            for (int64_t t = 0; t < n; ++t)
              for (int64_t r = 0; r < n_rows; ++r)
                mismatches += !same_bits(got[static_cast<size_t>(t * n_rows + r)],
                                         alone[static_cast<size_t>(ids[t] * n_rows + r)]);
            INFO("batch of " << n << " starting at row " << start);
            CHECK(mismatches == 0);
          }
        }
      }
    }
  }
}

TEST_CASE(
    "repacked Q4_K (16-row groups) batches of 1..17 tokens return the plain Q4_K gemm's bits on AVX-512, in both "
    "orders") {
  if (kernels::detected_isa() < kernels::Isa::kAvx512) return;
  const KType* q4k = nullptr;
  const auto types = all_ktypes();
  for (const KType& kt : types)
    if (kt.type == GgmlType::kQ4_K) q4k = &kt;
  REQUIRE(q4k != nullptr);
  const int64_t k = 768, n_rows = 48, nb = k / kernels::kQK_K;
  const size_t row_bytes = static_cast<size_t>(nb) * sizeof(kernels::BlockQ4K);
  for (bool quantized : {true, false}) {
    std::vector<uint8_t> plain(row_bytes * n_rows), x16(row_bytes * n_rows);
    std::mt19937 gen(5);
    const auto x = random_normal(static_cast<size_t>(n_rows * k), 6, 0.05f);
    for (int64_t r = 0; r < n_rows; ++r) {
      uint8_t* row = plain.data() + static_cast<size_t>(r) * row_bytes;
      if (quantized) q4k->quantize(x.data() + r * k, row, k);
      else fill_random_blocks(*q4k, row, nb, gen, 0.01f);
    }
    kernels::scalar::repack_q4_k_x16(plain.data(), x16.data(), n_rows, k);
    const int64_t max_tok = 17;
    auto acts = random_normal(static_cast<size_t>(max_tok * k), 8);
    for (int64_t i = 0; i < k; ++i) acts[static_cast<size_t>(2 * k + i)] = (i / 3) % 2 ? 100.0f : -100.0f;
    Rows a(max_tok, static_cast<size_t>(nb) * sizeof(kernels::BlockQ8K), 7, 3);
    for (int64_t t = 0; t < max_tok; ++t) kernels::scalar::quantize_q8_k(acts.data() + t * k, a.row(t), k);
    std::vector<float> ref(static_cast<size_t>(max_tok * n_rows)), ref_grouped(ref.size());
    kernels::scalar::gemm_q4_k(k, plain.data(), row_bytes, n_rows, a.row(0), a.stride(), max_tok, ref.data(),
                               static_cast<size_t>(n_rows));
    kernels::scalar::gemm_q4_k_grouped(k, plain.data(), row_bytes, n_rows, a.row(0), a.stride(), max_tok,
                                       ref_grouped.data(), static_cast<size_t>(n_rows));
    REQUIRE(ref != ref_grouped);  // the two orders differ somewhere, so the check below can tell them apart
    struct Variant {
      const char* name;
      kernels::GemmFn gemm;
      const std::vector<float>* ref;
    };
    std::vector<Variant> variants = {{"avx512", kernels::avx512::gemm_q4_k_x16, &ref},
                                     {"avx512 grouped", kernels::avx512::gemm_q4_k_x16_grouped, &ref_grouped}};
    if (kernels::has_avx512_vnni()) {
      variants.push_back({"avx512 vnni", kernels::avx512::gemm_q4_k_x16_vnni, &ref});
      variants.push_back({"avx512 vnni grouped", kernels::avx512::gemm_q4_k_x16_grouped_vnni, &ref_grouped});
    }
    for (int64_t n = 1; n <= max_tok; ++n) {
      INFO((quantized ? "quantized" : "random bytes") << ", n_tok " << n);
      for (const auto& [name, gemm, want] : variants) {
        INFO(name);
        const std::vector<float>& expect = *want;
        std::vector<float> got(static_cast<size_t>(n * n_rows), -1.0f);
        gemm(k, x16.data(), row_bytes, n_rows, a.row(0), a.stride(), n, got.data(), static_cast<size_t>(n_rows));
        int64_t mismatches = 0;
        for (size_t i = 0; i < got.size(); ++i) mismatches += !same_bits(got[i], expect[i]);
        CHECK(mismatches == 0);
      }
    }
  }
}
