// Helpers of the K-quant kernel tests: every (type, ISA) variant this CPU can run, seeded
// random weights (quantized, or raw random bytes with sane f16 scales), unaligned row storage.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/base/fp16.h"
#include "engine/base/ggml_type.h"
#include "kernels/kquant/blocks.h"
#include "kernels/core/isa.h"
#include "kernels/kquant/qx_K_lanes.h"
#include "kernels/kquant/kernels.h"
#include "kernels/core/type_ops.h"
#include "kernels/kquant/q4_K_lanes_avxvnni.h"

namespace baton::test::kq {

namespace k = baton::kernels;

struct Variant {
  std::string name;  // "scalar", "avx2", "avxvnni", "avx512", "avx512vnni"
  k::ToFloatFn to_float;
  k::GemmFn gemm;
  k::FromFloatFn quantize_q8k;
};

struct KType {
  GgmlType type;
  size_t block_bytes;
  k::FromFloatFn quantize;  // scalar reference quantizer
  // f16 fields (byte offsets) to overwrite with sane scales in random blocks.
  std::vector<size_t> f16_fields;
  std::vector<Variant> variants;  // [0] is scalar; only those this CPU runs
};

inline bool cpu_has(k::Isa isa) { return k::isa_supported(isa); }

// a2v_g: the AVX-VNNI tier's gemm (the AVX2 body built with AVX-VNNI, or for Q4_K the tier's
// token-parallel kernel; AVX2's to_float).
inline std::vector<Variant> variants_of(k::ToFloatFn s_tf, k::GemmFn s_g, k::ToFloatFn a2_tf, k::GemmFn a2_g,
                                        k::GemmFn a2v_g, k::ToFloatFn a5_tf, k::GemmFn a5_g, k::GemmFn vnni_g) {
  std::vector<Variant> v{{"scalar", s_tf, s_g, k::scalar::quantize_q8_k}};
  if (cpu_has(k::Isa::kAvx2)) v.push_back({"avx2", a2_tf, a2_g, k::avx2::quantize_q8_k});
  if (cpu_has(k::Isa::kAvxVnni)) v.push_back({"avxvnni", a2_tf, a2v_g, k::avxvnni::quantize_q8_k});
  if (cpu_has(k::Isa::kAvx512)) v.push_back({"avx512", a5_tf, a5_g, k::avx512::quantize_q8_k});
  if (k::has_avx512_vnni()) v.push_back({"avx512vnni", a5_tf, vnni_g, k::avx512::quantize_q8_k});
  return v;
}

inline std::vector<KType> all_ktypes() {
  using namespace baton::kernels;
  return {
      {GgmlType::kQ2_K,
       sizeof(BlockQ2K),
       scalar::quantize_q2_k_ref,
       {80, 82},
       variants_of(scalar::dequantize_q2_k, scalar::gemm_q2_k, avx2::dequantize_q2_k, avx2::gemm_q2_k_lanes,
                   avxvnni::gemm_q2_k_lanes, avx512::dequantize_q2_k, avx512::gemm_q2_k_lanes,
                   avx512::gemm_q2_k_lanes)},
      {GgmlType::kQ3_K,
       sizeof(BlockQ3K),
       scalar::quantize_q3_k_ref,
       {108},
       variants_of(scalar::dequantize_q3_k, scalar::gemm_q3_k, avx2::dequantize_q3_k, avx2::gemm_q3_k_lanes,
                   avxvnni::gemm_q3_k_lanes, avx512::dequantize_q3_k, avx512::gemm_q3_k_lanes,
                   avx512::gemm_q3_k_lanes)},
      {GgmlType::kQ4_K,
       sizeof(BlockQ4K),
       scalar::quantize_q4_k_ref,
       {0, 2},
       variants_of(scalar::dequantize_q4_k, scalar::gemm_q4_k, avx2::dequantize_q4_k, avx2::gemm_q4_k,
                   avxvnni::gemm_q4_k_lanes, avx512::dequantize_q4_k, avx512::gemm_q4_k, avx512::gemm_q4_k_vnni)},
      {GgmlType::kQ5_K,
       sizeof(BlockQ5K),
       scalar::quantize_q5_k_ref,
       {0, 2},
       variants_of(scalar::dequantize_q5_k, scalar::gemm_q5_k, avx2::dequantize_q5_k, avx2::gemm_q5_k,
                   avxvnni::gemm_q5_k, avx512::dequantize_q5_k, avx512::gemm_q5_k, avx512::gemm_q5_k_vnni)},
      {GgmlType::kQ6_K,
       sizeof(BlockQ6K),
       scalar::quantize_q6_k_ref,
       {208},
       variants_of(scalar::dequantize_q6_k, scalar::gemm_q6_k, avx2::dequantize_q6_k, avx2::gemm_q6_k_lanes,
                   avxvnni::gemm_q6_k_lanes, avx512::dequantize_q6_k, avx512::gemm_q6_k_lanes,
                   avx512::gemm_q6_k_lanes_vnni)},
  };
}

inline std::vector<float> random_normal(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// Rows of `row_bytes` payload each, `stride` bytes apart, starting `skew` bytes past a 64-byte
// boundary, so kernels see unaligned rows and strides.
class Rows {
 public:
  Rows(int64_t n_rows, size_t row_bytes, size_t stride_pad, size_t skew)
      : stride_(row_bytes + stride_pad), storage_(stride_ * static_cast<size_t>(n_rows) + skew + 64, 0xA5) {
    auto base = reinterpret_cast<uintptr_t>(storage_.data());
    data_ = reinterpret_cast<uint8_t*>((base + 63) / 64 * 64 + skew);
  }
  uint8_t* row(int64_t r) { return data_ + static_cast<size_t>(r) * stride_; }
  size_t stride() const { return stride_; }

 private:
  size_t stride_;
  std::vector<uint8_t> storage_;
  uint8_t* data_;
};

// Random bytes everywhere, with the f16 scales replaced by finite values in [-scale, scale]:
// every bit pattern of quants and sub-block scales occurs.
inline void fill_random_blocks(const KType& t, uint8_t* dst, int64_t n_blocks, std::mt19937& gen, float scale) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> real(-scale, scale);
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t* blk = dst + b * static_cast<int64_t>(t.block_bytes);
    for (size_t i = 0; i < t.block_bytes; ++i) blk[i] = static_cast<uint8_t>(byte(gen));
    for (size_t off : t.f16_fields) {
      const uint16_t h = fp32_to_fp16(real(gen));
      std::memcpy(blk + off, &h, 2);
    }
  }
}

inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace baton::test::kq
