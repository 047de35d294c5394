// Helpers shared by the float / legacy-quant kernel tests: the ISAs this CPU can run, seeded
// random data, byte buffers at deliberately odd addresses, and a gemm runner.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "engine/base/ggml_type.h"
#include "kernels/core/isa.h"
#include "kernels/core/type_ops.h"

namespace baton::test {

// scalar, then every higher variant the CPU supports (avxvnni only where it has AVX-VNNI).
inline std::vector<kernels::Isa> available_isas() {
  std::vector<kernels::Isa> isas;
  for (int i = 0; i <= static_cast<int>(kernels::detected_isa()); ++i)
    if (kernels::isa_supported(static_cast<kernels::Isa>(i))) isas.push_back(static_cast<kernels::Isa>(i));
  return isas;
}

// The kernel table of `type` at `isa`; fails the test when this build has none.
inline const kernels::TypeOps& ops_for(GgmlType type, kernels::Isa isa) {
  const auto* ops = kernels::find_type_ops(type, isa);
  REQUIRE(ops != nullptr);
  return *ops;
}

inline std::vector<float> random_normal(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

inline size_t row_bytes(GgmlType type, int64_t k) {
  const auto& info = require_ggml_type(type);
  return static_cast<size_t>(k / info.block_size) * info.block_bytes;
}

// Bytes starting `skew` bytes past a 64-byte boundary, so kernels see unaligned rows.
class SkewedBytes {
 public:
  SkewedBytes(size_t n, size_t skew) : storage_(n + skew + 64, 0), skew_(skew) {}
  uint8_t* data() {
    auto base = reinterpret_cast<uintptr_t>(storage_.data());
    return reinterpret_cast<uint8_t*>((base + 63) / 64 * 64 + skew_);
  }

 private:
  std::vector<uint8_t> storage_;
  size_t skew_;
};

// n_rows x k weights of `type` quantized by the scalar quantizer, at w_stride bytes per row
// (>= row_bytes) and `skew` bytes off alignment.
struct Matrix {
  Matrix(GgmlType type, const kernels::TypeOps& quantizer, const std::vector<float>& values, int64_t n_rows, int64_t k,
         size_t stride_pad, size_t skew)
      : stride(row_bytes(type, k) + stride_pad), bytes(stride * n_rows, skew) {
    for (int64_t r = 0; r < n_rows; ++r) quantizer.from_float(values.data() + r * k, bytes.data() + r * stride, k);
  }
  const uint8_t* row(int64_t r) { return bytes.data() + r * stride; }
  size_t stride;
  SkewedBytes bytes;
};

// out[t][r] of one gemm call over the given block of rows and tokens.
inline std::vector<float> run_gemm(const kernels::TypeOps& ops, int64_t k, Matrix& w, int64_t n_rows, Matrix& a,
                                   int64_t n_tok) {
  std::vector<float> out(static_cast<size_t>(n_rows * n_tok), -1.0f);
  ops.gemm(k, w.row(0), w.stride, n_rows, a.row(0), a.stride, n_tok, out.data(), n_rows);
  return out;
}

inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace baton::test
