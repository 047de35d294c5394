// Scalar reference kernels of Q4_K and Q5_K (layouts in kquant/blocks.h): dequantization as ggml's
// dequantize_row_q4_K / q5_K, and the integer super-block dot products of the gemm contract.
#include "kernels/kquant/kernels.h"
#include "kernels/kquant/qx_K_scalar.h"

namespace baton::kernels::scalar {
namespace {

constexpr size_t kD = offsetof(BlockQ4K, d), kDmin = offsetof(BlockQ4K, dmin);
static_assert(offsetof(BlockQ5K, d) == kD && offsetof(BlockQ5K, dmin) == kDmin &&
              offsetof(BlockQ5K, scales) == offsetof(BlockQ4K, scales));

// The 5-bit (Q5_K) or 4-bit (Q4_K: qh == nullptr) quant of element e of a super-block.
int quant_q45(const uint8_t* qs, const uint8_t* qh, int e) {
  const int c = e / 64, l = e % 32;
  const bool high_nibble = (e % 64) >= 32;
  int q = high_nibble ? (qs[32 * c + l] >> 4) : (qs[32 * c + l] & 0xF);
  if (qh && (qh[l] >> (2 * c + (high_nibble ? 1 : 0)) & 1)) q += 16;
  return q;
}

void dequantize_q45(const uint8_t* x, float* y, int64_t n, size_t block_bytes, size_t qs_offset, ptrdiff_t qh_offset) {
  for (int64_t i = 0; i < n / kQK_K; ++i, x += block_bytes, y += kQK_K) {
    const float d = load_f16(x + kD), dmin = load_f16(x + kDmin);
    const uint8_t* scales = x + offsetof(BlockQ4K, scales);
    const uint8_t* qh = qh_offset >= 0 ? x + qh_offset : nullptr;
    for (int j = 0; j < 8; ++j) {
      const ScaleMin sm = unpack_scale_min_k4(j, scales);
      const float d1 = d * sm.scale, m1 = dmin * sm.min;
      for (int l = 0; l < 32; ++l) y[32 * j + l] = d1 * quant_q45(x + qs_offset, qh, 32 * j + l) - m1;
    }
  }
}

// ggml's hsum_float_8: (x0 + x4) and so on, then (s0 + s2) + (s1 + s3).
float hsum8_ggml(const float* x) {
  const float s0 = x[4] + x[0], s1 = x[5] + x[1], s2 = x[6] + x[2], s3 = x[7] + x[3];
  return (s0 + s2) + (s1 + s3);
}

// Q4_K with two chains (d * sumi and dmin * summ, subtracted at the end), one step per
// kPairsPerStep pairs of 32-element sub-blocks (4: per super-block, llama.cpp's GEMV; 1: per
// 64 elements, its 4-row GEMM).
template <int kPairsPerStep>
void gemm_q4k_llama(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                    int64_t n_tok, float* out, size_t out_stride) {
  const int64_t nb = k / kQK_K;
  for (int64_t t = 0; t < n_tok; ++t) {
    const uint8_t* a_row = static_cast<const uint8_t*>(a) + static_cast<size_t>(t) * a_stride;
    for (int64_t r = 0; r < n_rows; ++r) {
      const uint8_t* w_row = static_cast<const uint8_t*>(w) + static_cast<size_t>(r) * w_stride;
      float acc = 0.0f, accm = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* x = w_row + b * static_cast<int64_t>(sizeof(BlockQ4K));
        const Q8KView ab(a_row + b * static_cast<int64_t>(sizeof(BlockQ8K)));
        const uint8_t* scales = x + offsetof(BlockQ4K, scales);
        const uint8_t* qs = x + offsetof(BlockQ4K, qs);
        const float dd = load_f16(x + kD) * ab.d, dm = load_f16(x + kDmin) * ab.d;
        for (int p0 = 0; p0 < 4; p0 += kPairsPerStep) {
          int32_t sumi = 0, summ = 0;
          for (int j = 2 * p0; j < 2 * (p0 + kPairsPerStep); ++j) {
            const ScaleMin sm = unpack_scale_min_k4(j, scales);
            int32_t sum = 0;
            for (int e = 32 * j; e < 32 * j + 32; ++e) sum += quant_q45(qs, nullptr, e) * ab.qs[e];
            sumi += sm.scale * sum;
            summ += sm.min * (ab.bsums[2 * j] + ab.bsums[2 * j + 1]);
          }
          acc = std::fma(static_cast<float>(sumi), dd, acc);
          accm = std::fma(static_cast<float>(summ), dm, accm);
        }
      }
      out[static_cast<size_t>(t) * out_stride + static_cast<size_t>(r)] = acc - accm;
    }
  }
}

}  // namespace

void dequantize_q4_k(const void* src, float* dst, int64_t n) {
  dequantize_q45(static_cast<const uint8_t*>(src), dst, n, sizeof(BlockQ4K), offsetof(BlockQ4K, qs), -1);
}

void dequantize_q5_k(const void* src, float* dst, int64_t n) {
  dequantize_q45(static_cast<const uint8_t*>(src), dst, n, sizeof(BlockQ5K), offsetof(BlockQ5K, qs),
                 offsetof(BlockQ5K, qh));
}

// Q4_K in the order of llama.cpp's repacked (q4_K_8x8) AVX2 GEMV: two float chains per output,
// one step per super-block, subtracted at the end.
void gemm_q4_k(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
               float* out, size_t out_stride) {
  gemm_q4k_llama<4>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

// Q4_K in the order of llama.cpp's repacked AVX2 GEMM (rows in a full group of 4): the same two
// chains, one step per 64 elements.
void gemm_q4_k_grouped(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride,
                       int64_t n_tok, float* out, size_t out_stride) {
  gemm_q4k_llama<1>(k, w, w_stride, n_rows, a, a_stride, n_tok, out, out_stride);
}

// Q5_K in the order of llama.cpp's AVX2 ggml_vec_dot_q5_K_q8_K (see kquant/kernels.h).
void gemm_q5_k(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a, size_t a_stride, int64_t n_tok,
               float* out, size_t out_stride) {
  const int64_t nb = k / kQK_K;
  for (int64_t t = 0; t < n_tok; ++t) {
    const uint8_t* a_row = static_cast<const uint8_t*>(a) + static_cast<size_t>(t) * a_stride;
    for (int64_t r = 0; r < n_rows; ++r) {
      const uint8_t* w_row = static_cast<const uint8_t*>(w) + static_cast<size_t>(r) * w_stride;
      float acc[8] = {};
      float summs = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* x = w_row + b * static_cast<int64_t>(sizeof(BlockQ5K));
        const Q8KView ab(a_row + b * static_cast<int64_t>(sizeof(BlockQ8K)));
        const uint8_t* scales = x + offsetof(BlockQ5K, scales);
        const uint8_t* qs = x + offsetof(BlockQ5K, qs);
        const uint8_t* qh = x + offsetof(BlockQ5K, qh);
        int32_t lane[8] = {}, summ = 0;
        for (int j = 0; j < 8; ++j) {
          const ScaleMin sm = unpack_scale_min_k4(j, scales);
          summ += sm.min * (ab.bsums[2 * j] + ab.bsums[2 * j + 1]);
          for (int l = 0; l < 32; ++l) {
            const int e = 32 * j + l;
            lane[l / 4] += sm.scale * quant_q45(qs, qh, e) * ab.qs[e];
          }
        }
        const float d = ab.d * load_f16(x + kD);
        const float dmin = -ab.d * load_f16(x + kDmin);
        for (int l = 0; l < 8; ++l) acc[l] = std::fma(d, static_cast<float>(lane[l]), acc[l]);
        summs = std::fma(dmin, static_cast<float>(summ), summs);
      }
      out[static_cast<size_t>(t) * out_stride + static_cast<size_t>(r)] = hsum8_ggml(acc) + summs;
    }
  }
}

}  // namespace baton::kernels::scalar
