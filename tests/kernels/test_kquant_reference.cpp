// The scalar K-quant reference kernels against hand-checkable values and against plain float
// arithmetic on the dequantized values: Q8_K bytes, quantize/dequantize round trips, and the
// gemm contract (integer super-block sums + fixed float steps).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "engine/base/fp16.h"
#include "kernels/kquant/blocks.h"
#include "kernels/kquant/kernels.h"
#include "kernels/core/type_ops.h"

using namespace baton;
using namespace baton::kernels;

namespace {

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed;
  for (auto& x : v) {  // xorshift: deterministic everywhere, roughly uniform in [-1, 1)
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    x = static_cast<float>(static_cast<int32_t>(s)) / 2147483648.0f;
  }
  return v;
}

BlockQ8K quantize_one_q8k(const float* x) {
  BlockQ8K b;
  scalar::quantize_q8_k(x, &b, kQK_K);
  return b;
}

}  // namespace

TEST_CASE("Q8_K maps the signed value of largest magnitude to -127 and stores d = 1 / iscale") {
  std::vector<float> x(kQK_K, 0.0f);
  x[0] = 1.0f;     // 1 * -31.75 = -31.75 -> -32
  x[1] = -0.5f;    // 15.875 -> 16
  x[3] = 4.0f;     // the first of the two largest magnitudes: -127
  x[7] = -4.0f;    // same magnitude, later: +127
  x[20] = 0.1f;    // -3.175 -> -3
  x[40] = 0.126f;  // -4.0005 -> -4
  const BlockQ8K b = quantize_one_q8k(x.data());
  const float iscale = -127.0f / 4.0f;
  CHECK(b.d == 1.0f / iscale);
  CHECK(b.qs[0] == -32);
  CHECK(b.qs[1] == 16);
  CHECK(b.qs[3] == -127);
  CHECK(b.qs[7] == 127);
  CHECK(b.qs[20] == -3);
  CHECK(b.qs[40] == -4);
  CHECK(b.qs[2] == 0);
  CHECK(b.bsums[0] == -32 + 16 - 127 + 127);
  CHECK(b.bsums[1] == -3);
  CHECK(b.bsums[2] == -4);
  for (int s = 3; s < 16; ++s) CHECK(b.bsums[s] == 0);
}

TEST_CASE("Q8_K rounds halves to even like ggml's nearest_int") {
  std::vector<float> x(kQK_K, 0.0f);
  x[0] = -127.0f;  // iscale = 1
  x[1] = 2.5f;
  x[2] = 3.5f;
  x[3] = -2.5f;
  const BlockQ8K b = quantize_one_q8k(x.data());
  CHECK(b.d == 1.0f);
  CHECK(b.qs[1] == 2);
  CHECK(b.qs[2] == 4);
  CHECK(b.qs[3] == -2);
}

TEST_CASE("Q8_K of an all-zero block is all zero, bsums included") {
  std::vector<float> x(2 * kQK_K, 0.0f);
  std::vector<uint8_t> out(2 * sizeof(BlockQ8K), 0xFF);
  scalar::quantize_q8_k(x.data(), out.data(), 2 * kQK_K);
  for (uint8_t byte : out) CHECK(byte == 0);
}

TEST_CASE("Q4_K scale/min unpacking follows ggml's get_scale_min_k4") {
  uint8_t s[12];
  for (int i = 0; i < 12; ++i) s[i] = static_cast<uint8_t>(0x40 * (i % 4) + 3 * i + 1);
  for (int j = 0; j < 4; ++j) {
    CHECK(unpack_scale_min_k4(j, s).scale == (s[j] & 63));
    CHECK(unpack_scale_min_k4(j, s).min == (s[j + 4] & 63));
  }
  for (int j = 4; j < 8; ++j) {
    CHECK(unpack_scale_min_k4(j, s).scale == ((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4)));
    CHECK(unpack_scale_min_k4(j, s).min == ((s[j + 4] >> 4) | ((s[j] >> 6) << 4)));
  }
}

TEST_CASE("a hand-built Q4_K block dequantizes to d * sc * q - dmin * m") {
  BlockQ4K b{};
  b.d = fp32_to_fp16(0.5f);
  b.dmin = fp32_to_fp16(0.25f);
  b.scales[1] = 3;       // sub-block 1: scale 3
  b.scales[5] = 2;       //              min 2
  b.scales[10] = 0x47;   // sub-block 6: scale low 7, min low 4
  b.scales[2] = 1 << 6;  //              scale high bits 1 -> 23
  b.scales[6] = 2 << 6;  //              min high bits 2 -> 36
  b.qs[5] = 0x90;        // element 32 + 5 (high nibble, sub-block 1): q = 9
  b.qs[96 + 7] = 0x0C;   // element 192 + 7 (low nibble of chunk 3, sub-block 6): q = 12
  std::vector<float> y(kQK_K);
  scalar::dequantize_q4_k(&b, y.data(), kQK_K);
  CHECK(y[37] == 0.5f * 3 * 9 - 0.25f * 2);
  CHECK(y[199] == 0.5f * 23 * 12 - 0.25f * 36);
  CHECK(y[0] == 0.0f);
}

TEST_CASE("K-quant reference quantizers round-trip within each format's error") {
  struct Case {
    const char* name;
    FromFloatFn quantize;
    ToFloatFn dequantize;
    size_t block_bytes;
    double max_rel_rms;
  };
  // Relative RMS error bounds for uniform data (llama.cpp's own files show 0.29 / 0.15 /
  // 0.071 / 0.036 / 0.018 for normal data; uniform data quantizes better).
  const Case cases[] = {
      {"Q2_K", scalar::quantize_q2_k_ref, scalar::dequantize_q2_k, sizeof(BlockQ2K), 0.30},
      {"Q3_K", scalar::quantize_q3_k_ref, scalar::dequantize_q3_k, sizeof(BlockQ3K), 0.16},
      {"Q4_K", scalar::quantize_q4_k_ref, scalar::dequantize_q4_k, sizeof(BlockQ4K), 0.075},
      {"Q5_K", scalar::quantize_q5_k_ref, scalar::dequantize_q5_k, sizeof(BlockQ5K), 0.038},
      {"Q6_K", scalar::quantize_q6_k_ref, scalar::dequantize_q6_k, sizeof(BlockQ6K), 0.019},
  };
  const int64_t n = 8 * kQK_K;
  const auto x = random_values(n, 12345);
  for (const Case& c : cases) {
    INFO(c.name);
    std::vector<uint8_t> q(n / kQK_K * c.block_bytes);
    c.quantize(x.data(), q.data(), n);
    std::vector<float> y(n);
    c.dequantize(q.data(), y.data(), n);
    double se = 0, sx = 0;
    for (int64_t i = 0; i < n; ++i) {
      se += (y[i] - x[i]) * (y[i] - x[i]);
      sx += x[i] * x[i];
    }
    CHECK(std::sqrt(se / sx) < c.max_rel_rms);
    CHECK(std::sqrt(se / sx) > 0.0);
  }
}

TEST_CASE("the scalar K-quant gemm equals the dot product of the dequantized rows") {
  struct Case {
    const char* name;
    FromFloatFn quantize;
    ToFloatFn dequantize;
    GemmFn gemm;
    size_t block_bytes;
  };
  const Case cases[] = {
      {"Q2_K", scalar::quantize_q2_k_ref, scalar::dequantize_q2_k, scalar::gemm_q2_k, sizeof(BlockQ2K)},
      {"Q3_K", scalar::quantize_q3_k_ref, scalar::dequantize_q3_k, scalar::gemm_q3_k, sizeof(BlockQ3K)},
      {"Q4_K", scalar::quantize_q4_k_ref, scalar::dequantize_q4_k, scalar::gemm_q4_k, sizeof(BlockQ4K)},
      {"Q5_K", scalar::quantize_q5_k_ref, scalar::dequantize_q5_k, scalar::gemm_q5_k, sizeof(BlockQ5K)},
      {"Q6_K", scalar::quantize_q6_k_ref, scalar::dequantize_q6_k, scalar::gemm_q6_k, sizeof(BlockQ6K)},
  };
  const int64_t k = 3 * kQK_K, n_rows = 3, n_tok = 2;
  const auto wf = random_values(n_rows * k, 7);
  const auto af = random_values(n_tok * k, 8);
  std::vector<uint8_t> a(n_tok * (k / kQK_K) * sizeof(BlockQ8K));
  scalar::quantize_q8_k(af.data(), a.data(), n_tok * k);
  std::vector<float> ad(n_tok * k);
  scalar::dequantize_q8_k(a.data(), ad.data(), n_tok * k);
  for (const Case& c : cases) {
    INFO(c.name);
    const size_t row_bytes = k / kQK_K * c.block_bytes;
    std::vector<uint8_t> w(n_rows * row_bytes);
    c.quantize(wf.data(), w.data(), n_rows * k);
    std::vector<float> wd(n_rows * k);
    c.dequantize(w.data(), wd.data(), n_rows * k);
    std::vector<float> out(n_tok * n_rows);
    c.gemm(k, w.data(), row_bytes, n_rows, a.data(), k / kQK_K * sizeof(BlockQ8K), n_tok, out.data(), n_rows);
    for (int64_t t = 0; t < n_tok; ++t) {
      for (int64_t r = 0; r < n_rows; ++r) {
        double dot = 0, mag = 0;
        for (int64_t i = 0; i < k; ++i) {
          dot += static_cast<double>(wd[r * k + i]) * ad[t * k + i];
          mag += std::fabs(static_cast<double>(wd[r * k + i]) * ad[t * k + i]);
        }
        CHECK(std::fabs(out[t * n_rows + r] - dot) <= 1e-5 * mag);
      }
    }
  }
}

TEST_CASE("the type table serves every K-quant with Q8_K activations") {
  for (GgmlType t : {GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K}) {
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
      const TypeOps* ops = find_type_ops(t, isa);
      REQUIRE(ops != nullptr);
      CHECK(ops->type == t);
      CHECK(ops->vec_dot_type == GgmlType::kQ8_K);
      CHECK(ops->to_float != nullptr);
      CHECK(ops->from_float != nullptr);
      CHECK(ops->gemm != nullptr);
    }
  }
  const TypeOps* q8k = find_type_ops(GgmlType::kQ8_K, Isa::kAvx512);
  REQUIRE(q8k != nullptr);
  CHECK(q8k->from_float != nullptr);
  CHECK(q8k->gemm == nullptr);
}
