// Every SIMD variant of the K-quant kernels against the scalar reference, on this CPU:
// dequantization and Q8_K quantization byte/bit-identical, gemm bit-identical over awkward
// shapes (one row, one super-block, odd counts, tiles crossing), and batch invariance.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "test_kquant_util.h"

using namespace baton;
using namespace baton::test::kq;

namespace {

// n_tok activation rows of k elements in Q8_K, from the scalar quantizer, in skewed storage.
Rows make_activations(int64_t n_tok, int64_t k, uint32_t seed, size_t pad, size_t skew) {
  Rows a(n_tok, k / kernels::kQK_K * sizeof(kernels::BlockQ8K), pad, skew);
  const auto x = random_normal(static_cast<size_t>(n_tok * k), seed);
  for (int64_t t = 0; t < n_tok; ++t) kernels::scalar::quantize_q8_k(x.data() + t * k, a.row(t), k);
  return a;
}

// Weights: random bytes (all quant/scale patterns) or quantized normal data.
Rows make_weights(const KType& kt, int64_t n_rows, int64_t k, uint32_t seed, bool quantized, size_t pad, size_t skew) {
  const int64_t nb = k / kernels::kQK_K;
  Rows w(n_rows, static_cast<size_t>(nb) * kt.block_bytes, pad, skew);
  std::mt19937 gen(seed);
  const auto x = random_normal(static_cast<size_t>(n_rows * k), seed + 1, 0.05f);
  for (int64_t r = 0; r < n_rows; ++r) {
    if (quantized) kt.quantize(x.data() + r * k, w.row(r), k);
    else fill_random_blocks(kt, w.row(r), nb, gen, 0.01f);
  }
  return w;
}

std::vector<float> run(const Variant& v, int64_t k, Rows& w, int64_t r0, int64_t n_rows, Rows& a, int64_t t0,
                       int64_t n_tok) {
  std::vector<float> out(static_cast<size_t>(n_rows * n_tok), std::nanf(""));
  v.gemm(k, w.row(r0), w.stride(), n_rows, a.row(t0), a.stride(), n_tok, out.data(), static_cast<size_t>(n_rows));
  return out;
}

}  // namespace

TEST_CASE("every ISA dequantizes every K-quant bit-identically to the scalar reference") {
  std::mt19937 gen(99);
  for (const KType& kt : all_ktypes()) {
    const int64_t nb = 7, n = nb * kernels::kQK_K;
    std::vector<uint8_t> blocks(static_cast<size_t>(nb) * kt.block_bytes);
    fill_random_blocks(kt, blocks.data(), nb, gen, 2.0f);
    std::vector<float> ref(n);
    kt.variants[0].to_float(blocks.data(), ref.data(), n);
    for (size_t vi = 1; vi < kt.variants.size(); ++vi) {
      INFO(ggml_type_name(kt.type) << " " << kt.variants[vi].name);
      std::vector<float> got(n, -1.0f);
      kt.variants[vi].to_float(blocks.data(), got.data(), n);
      int64_t mismatches = 0;
      for (int64_t i = 0; i < n; ++i) mismatches += !same_bits(ref[i], got[i]);
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("every ISA's Q8_K quantizer writes the scalar reference's bytes") {
  const int64_t nb = 9, n = nb * kernels::kQK_K;
  auto x = random_normal(n, 5, 3.0f);
  std::fill(x.begin() + 2 * kernels::kQK_K, x.begin() + 3 * kernels::kQK_K, 0.0f);  // an all-zero block
  x[4 * kernels::kQK_K + 10] = 9.0f;                                                // a tie of magnitudes:
  x[4 * kernels::kQK_K + 200] = -9.0f;                                              // the first one wins
  x[5 * kernels::kQK_K + 255] = -20.0f;                                             // max in the last lane
  for (int64_t i = 6 * kernels::kQK_K; i < 7 * kernels::kQK_K; ++i) x[i] = 0.5f * static_cast<float>(i % 7);  // halves
  for (int64_t i = 7 * kernels::kQK_K; i < 8 * kernels::kQK_K; ++i)
    x[i] = (i % 3 ? 1e-38f : -2e-38f);  // -127/max = inf
  std::vector<uint8_t> ref(nb * sizeof(kernels::BlockQ8K));
  kernels::scalar::quantize_q8_k(x.data(), ref.data(), n);
  const std::vector<KType> types = all_ktypes();
  for (const Variant& v : types[0].variants) {
    INFO(v.name);
    std::vector<uint8_t> got(ref.size(), 0xCD);
    v.quantize_q8k(x.data(), got.data(), n);
    CHECK(got == ref);
  }
}

TEST_CASE("every ISA's Q8_K quantizer matches the scalar reference on infinities and NaNs") {
  // NaNs are skipped when finding the maximum and quantize to 0; an infinite maximum makes
  // iscale = 0, so inf * 0 = NaN -> 0 too. Several in one 16-element group used to sum INT_MIN
  // lanes (signed overflow) in the AVX-512 bsums.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const int64_t nb = 5, n = nb * kernels::kQK_K;
  auto x = random_normal(n, 17, 2.0f);
  for (int j = 0; j < 4; ++j) x[3 + 2 * j] = nan;  // block 0: NaNs in one group
  x[kernels::kQK_K + 1] = -inf;                    // block 1: -inf first,
  x[kernels::kQK_K + 5] = inf;                     // then +inf, same group
  x[kernels::kQK_K + 9] = nan;
  x[2 * kernels::kQK_K + 255] = nan;                                             // block 2: NaN in the last lane
  for (int64_t i = 3 * kernels::kQK_K; i < 4 * kernels::kQK_K; ++i) x[i] = nan;  // block 3: all NaN
  std::vector<uint8_t> ref(nb * sizeof(kernels::BlockQ8K));
  kernels::scalar::quantize_q8_k(x.data(), ref.data(), n);
  const std::vector<KType> types = all_ktypes();
  for (const Variant& v : types[0].variants) {
    INFO(v.name);
    std::vector<uint8_t> got(ref.size(), 0xCD);
    v.quantize_q8k(x.data(), got.data(), n);
    CHECK(got == ref);
  }
}

TEST_CASE("every ISA's K-quant gemm returns the scalar reference's bits over awkward shapes") {
  struct Shape {
    int64_t k, n_rows, n_tok;
  };
  const Shape shapes[] = {{256, 1, 1},   {256, 3, 2},  {512, 17, 1},  {768, 5, 3},  {256, 8, 4},   {1280, 13, 5},
                          {512, 9, 6},   {256, 33, 7}, {768, 4, 8},   {256, 7, 9},  {512, 21, 16}, {256, 6, 17},
                          {768, 11, 33}, {256, 1, 12}, {1024, 40, 2}, {256, 19, 24}};
  for (const KType& kt : all_ktypes()) {
    for (bool quantized : {false, true}) {
      for (const Shape& s : shapes) {
        Rows w = make_weights(kt, s.n_rows, s.k, static_cast<uint32_t>(s.k + s.n_rows), quantized, 3, 5);
        Rows a = make_activations(s.n_tok, s.k, static_cast<uint32_t>(s.n_tok * 31), 7, 3);
        const auto ref = run(kt.variants[0], s.k, w, 0, s.n_rows, a, 0, s.n_tok);
        for (size_t vi = 1; vi < kt.variants.size(); ++vi) {
          INFO(ggml_type_name(kt.type) << " " << kt.variants[vi].name << " k=" << s.k << " rows=" << s.n_rows
                                       << " tok=" << s.n_tok << (quantized ? " quantized" : " random bytes"));
          const auto got = run(kt.variants[vi], s.k, w, 0, s.n_rows, a, 0, s.n_tok);
          int64_t mismatches = 0;
          for (size_t i = 0; i < ref.size(); ++i) mismatches += !same_bits(ref[i], got[i]);
          CHECK(mismatches == 0);
        }
      }
    }
  }
}

TEST_CASE("K-quant gemms are exact at the extremes of quants, scales and activations") {
  // n_tok 1 runs the decode (row) kernels, 18 the batch ones; 11 rows leave a partial row tile.
  const int64_t k = 512, n_rows = 11;
  // Activation signs: alternating in runs of 3, or one sign throughout (the largest partial sums:
  // 4 products of 63 * 127 fill 15 bits for Q6_K).
  for (const int sign_pattern : {0, 1, -1})
    for (const int64_t n_tok : {int64_t{1}, int64_t{18}}) {
      for (const KType& kt : all_ktypes()) {
        Rows w(n_rows, 2 * kt.block_bytes, 0, 1);
        for (int64_t r = 0; r < n_rows; ++r) {
          // Rows alternate all-ones bits and all-zero bits (largest / smallest quants and scales).
          std::fill(w.row(r), w.row(r) + 2 * kt.block_bytes, r % 2 ? 0xFF : 0x00);
          for (int64_t b = 0; b < 2; ++b)
            for (size_t off : kt.f16_fields) {
              const uint16_t h = fp32_to_fp16(r % 3 ? 1.0f : -0.5f);
              std::memcpy(w.row(r) + b * kt.block_bytes + off, &h, 2);
            }
        }
        std::vector<float> x(static_cast<size_t>(n_tok * k));
        for (size_t i = 0; i < x.size(); ++i)  // +-127 after quantization
          x[i] = sign_pattern != 0 ? 100.0f * static_cast<float>(sign_pattern) : (i / 3) % 2 ? 100.0f : -100.0f;
        Rows a(n_tok, 2 * sizeof(kernels::BlockQ8K), 0, 2);
        for (int64_t t = 0; t < n_tok; ++t) kernels::scalar::quantize_q8_k(x.data() + t * k, a.row(t), k);
        const auto ref = run(kt.variants[0], k, w, 0, n_rows, a, 0, n_tok);
        for (size_t vi = 1; vi < kt.variants.size(); ++vi) {
          INFO(ggml_type_name(kt.type) << " " << kt.variants[vi].name << " n_tok=" << n_tok << " signs "
                                       << sign_pattern);
          const auto got = run(kt.variants[vi], k, w, 0, n_rows, a, 0, n_tok);
          int64_t mismatches = 0;
          for (size_t i = 0; i < ref.size(); ++i) mismatches += !same_bits(ref[i], got[i]);
          CHECK(mismatches == 0);
        }
      }
    }
}

TEST_CASE("every K-quant gemm variant is batch invariant: any sub-block of rows and tokens gives the same bits") {
  const int64_t k = 768, n_rows = 37, n_tok = 35;
  for (const KType& kt : all_ktypes()) {
    Rows w = make_weights(kt, n_rows, k, 4242, true, 1, 7);
    Rows a = make_activations(n_tok, k, 77, 5, 1);
    for (const Variant& v : kt.variants) {
      INFO(ggml_type_name(kt.type) << " " << v.name);
      const auto full = run(v, k, w, 0, n_rows, a, 0, n_tok);
      int64_t mismatches = 0;
      // Element by element (1 x 1 calls), on a sample that covers every tile position.
      for (int64_t t = 0; t < n_tok; t += 3)
        for (int64_t r = 0; r < n_rows; r += 2)
          mismatches += !same_bits(run(v, k, w, r, 1, a, t, 1)[0], full[t * n_rows + r]);
      // Sub-matrices at odd offsets and sizes.
      const int64_t boxes[][4] = {{5, 16, 3, 9}, {1, 36, 0, 35}, {17, 3, 20, 15}, {0, 37, 7, 1}, {30, 7, 2, 2}};
      for (const auto& bx : boxes) {
        const auto part = run(v, k, w, bx[0], bx[1], a, bx[2], bx[3]);
        for (int64_t t = 0; t < bx[3]; ++t)
          for (int64_t r = 0; r < bx[1]; ++r)
            mismatches += !same_bits(part[t * bx[1] + r], full[(bx[2] + t) * n_rows + bx[0] + r]);
      }
      CHECK(mismatches == 0);
    }
  }
}
