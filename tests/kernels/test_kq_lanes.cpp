// The Q2_K / Q3_K / Q6_K gemms in llama.cpp's 8-lane order (kernels/kquant/qx_K_gemm_lanes_scalar.h): bits
// recorded from llama.cpp itself, the order spelled out by hand, and every ISA variant.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/base/fp16.h"
#include "kernels/kquant/blocks.h"
#include "kernels/core/isa.h"
#include "kernels/kquant/qx_K_lanes.h"
#include "kernels/kquant/kernels.h"
#include "kernels/core/type_ops.h"

namespace {

using namespace baton;
using namespace baton::kernels;

// Deterministic inputs: kRows weight rows and kTok activation rows of kK elements, values
// (integer in -1000..1000) / 256, the weights scaled per 256-element super-block by 2^(3b - 3) so
// super-blocks of very different magnitude meet in the accumulation.
constexpr int kK = 768, kRows = 4, kTok = 2, kNb = kK / kQK_K;
float lanes_test_value(uint32_t i, uint32_t seed) {
  uint32_t h = i * 2654435761u ^ (seed * 40503u + 0x9E3779B9u);
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  return static_cast<float>(static_cast<int>(h % 2001) - 1000) / 256.0f;
}
std::vector<float> lanes_test_weights() {
  std::vector<float> w(kRows * kK);
  for (int i = 0; i < kRows * kK; ++i)
    w[i] = lanes_test_value(i, 1) * static_cast<float>(1 << (3 * ((i % kK) / 256))) / 8.0f;
  return w;
}
std::vector<float> lanes_test_activations() {
  std::vector<float> x(kTok * kK);
  for (int i = 0; i < kTok * kK; ++i) x[i] = lanes_test_value(i, 2);
  return x;
}

struct Format {
  const char* name;
  size_t block_bytes;
  FromFloatFn quantize;
  std::vector<GemmFn> gemms;        // scalar first, then every SIMD variant this CPU runs
  uint32_t expected[kTok * kRows];  // out[t * kRows + r] as llama.cpp computes it
};

std::vector<GemmFn> variants(GemmFn scalar_fn, GemmFn avx2_fn, GemmFn avxvnni_fn, GemmFn avx512_fn) {
  std::vector<GemmFn> v{scalar_fn};
  if (isa_supported(Isa::kAvx2)) v.push_back(avx2_fn);
  if (isa_supported(Isa::kAvxVnni)) v.push_back(avxvnni_fn);
  if (isa_supported(Isa::kAvx512)) v.push_back(avx512_fn);
  return v;
}

std::vector<Format> formats() {
  // Expected bits: ggml_vec_dot_q{2,3,6}_K_q8_K of libggml-cpu-haswell.so (node-llama-cpp 3.21.1's
  // AVX2 build, the one the golden outputs came from) on these inputs, quantized by ggml's
  // quantize_row_q*_K_ref and quantize_row_q8_K (whose bytes ours equal).
  return {
      {"Q2_K",
       sizeof(BlockQ2K),
       scalar::quantize_q2_k_ref,
       variants(scalar::gemm_q2_k, avx2::gemm_q2_k_lanes, avxvnni::gemm_q2_k_lanes, avx512::gemm_q2_k_lanes),
       {0x4482a59du, 0x42b169f4u, 0xc44cc78au, 0xc42bf2a8u, 0x449f6534u, 0xc461b320u, 0xc3c7300eu, 0xc4ecbcc8u}},
      {"Q3_K",
       sizeof(BlockQ3K),
       scalar::quantize_q3_k_ref,
       variants(scalar::gemm_q3_k, avx2::gemm_q3_k_lanes, avxvnni::gemm_q3_k_lanes, avx512::gemm_q3_k_lanes),
       {0x44533d0eu, 0x434dcfd8u, 0xc423a345u, 0xc44a6740u, 0x44c1b1e5u, 0xc404230bu, 0xc3c96762u, 0xc502f7fau}},
      {"Q6_K",
       sizeof(BlockQ6K),
       scalar::quantize_q6_k_ref,
       variants(scalar::gemm_q6_k, avx2::gemm_q6_k_lanes, avxvnni::gemm_q6_k_lanes, avx512::gemm_q6_k_lanes),
       {0x4477f56eu, 0x43516018u, 0xc43dda97u, 0xc438338eu, 0x44b4d956u, 0xc4106074u, 0xc3e27dc9u, 0xc5014c24u}},
  };
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

}  // namespace

TEST_CASE("Q2_K, Q3_K and Q6_K gemms return llama.cpp's AVX2 vec_dot bits on every ISA") {
  const std::vector<float> xf = lanes_test_activations();
  std::vector<uint8_t> a(kTok * kNb * sizeof(BlockQ8K));
  scalar::quantize_q8_k(xf.data(), a.data(), kTok * kK);
  const std::vector<float> wf = lanes_test_weights();
  for (const Format& f : formats()) {
    std::vector<uint8_t> w(kRows * kNb * f.block_bytes);
    f.quantize(wf.data(), w.data(), kRows * kK);
    for (size_t v = 0; v < f.gemms.size(); ++v) {
      INFO(f.name << " variant " << v << " (0 = scalar, 1 = avx2, 2 = avx512)");
      std::vector<float> out(kTok * kRows);
      f.gemms[v](kK, w.data(), kNb * f.block_bytes, kRows, a.data(), kNb * sizeof(BlockQ8K), kTok, out.data(), kRows);
      for (int i = 0; i < kTok * kRows; ++i) CHECK(bits(out[i]) == f.expected[i]);
    }
  }
}

TEST_CASE("a hand-encoded Q6_K row follows the 8-lane order, not one float chain") {
  // Two super-blocks of known quants (0..63, value q - 32), scales and f16 d, against a Q8_K row
  // built by hand; the expected value is the order of kquant/qx_K_gemm_lanes_scalar.h spelled out here
  // (ggml's AVX2 ggml_vec_dot_q6_K_q8_K as compiled in the golden's build).
  constexpr int kBlocks = 2;
  int orders_differ = 0;
  for (uint32_t seed : {12345u, 777u, 4242u, 99u}) {
    auto next = [&seed] {
      seed = seed * 1664525u + 1013904223u;
      return seed >> 8;
    };
    std::vector<uint8_t> w(kBlocks * sizeof(BlockQ6K)), a(kBlocks * sizeof(BlockQ8K));
    int q[kBlocks][kQK_K], sc[kBlocks][16], aq[kBlocks][kQK_K];
    const float dw[kBlocks] = {fp16_to_fp32(fp32_to_fp16(0.75f)), fp16_to_fp32(fp32_to_fp16(3.1e-4f))};
    const float da[kBlocks] = {0.0123f, 0.9876f};
    for (int b = 0; b < kBlocks; ++b) {
      BlockQ6K blk{};
      for (int e = 0; e < kQK_K; ++e) q[b][e] = static_cast<int>(next() % 64);
      for (int s = 0; s < 16; ++s) sc[b][s] = static_cast<int>(next() % 64) - 32;
      for (int n = 0; n < 2; ++n)
        for (int l = 0; l < 32; ++l) {
          const int* qq = q[b] + 128 * n;
          blk.ql[64 * n + l] = static_cast<uint8_t>((qq[l] & 0xF) | ((qq[64 + l] & 0xF) << 4));
          blk.ql[64 * n + 32 + l] = static_cast<uint8_t>((qq[32 + l] & 0xF) | ((qq[96 + l] & 0xF) << 4));
          blk.qh[32 * n + l] = static_cast<uint8_t>((qq[l] >> 4) | ((qq[32 + l] >> 4) << 2) | ((qq[64 + l] >> 4) << 4) |
                                                    ((qq[96 + l] >> 4) << 6));
        }
      for (int s = 0; s < 16; ++s) blk.scales[s] = static_cast<int8_t>(sc[b][s]);
      blk.d = fp32_to_fp16(dw[b]);
      std::memcpy(w.data() + b * sizeof(BlockQ6K), &blk, sizeof blk);
      BlockQ8K act{};
      act.d = da[b];
      for (int e = 0; e < kQK_K; ++e) {
        aq[b][e] = static_cast<int>(next() % 255) - 127;
        act.qs[e] = static_cast<int8_t>(aq[b][e]);
        act.bsums[e / 16] = static_cast<int16_t>(act.bsums[e / 16] + aq[b][e]);
      }
      std::memcpy(a.data() + b * sizeof(BlockQ8K), &act, sizeof act);
    }
    float acc[8] = {}, chain = 0.0f;
    for (int b = 0; b < kBlocks; ++b) {
      int64_t total = 0;
      for (int lane = 0; lane < 8; ++lane) {
        // Unsigned quants in the lanes; the offset 32 comes off each lane through two bsums.
        int64_t sum = 0;
        for (int c = 0; c < 8; ++c)
          for (int i = 0; i < 4; ++i) {
            const int e = 32 * c + 4 * lane + i;
            sum += static_cast<int64_t>(sc[b][e / 16]) * q[b][e] * aq[b][e];
          }
        for (int s = 2 * lane; s < 2 * lane + 2; ++s) {
          int64_t bsum = 0;
          for (int e = 16 * s; e < 16 * s + 16; ++e) bsum += aq[b][e];
          sum -= 32 * sc[b][s] * bsum;
        }
        acc[lane] = std::fma(da[b] * dw[b], static_cast<float>(sum), acc[lane]);
        total += sum;
      }
      chain = std::fma(dw[b] * da[b], static_cast<float>(total), chain);
    }
    const float expected = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
    orders_differ += bits(expected) != bits(chain);
    const size_t w_bytes = w.size(), a_bytes = a.size();
    for (GemmFn g :
         variants(scalar::gemm_q6_k, avx2::gemm_q6_k_lanes, avxvnni::gemm_q6_k_lanes, avx512::gemm_q6_k_lanes)) {
      float out = 0.0f;
      g(kBlocks * kQK_K, w.data(), w_bytes, 1, a.data(), a_bytes, 1, &out, 1);
      CHECK(bits(out) == bits(expected));
    }
    // The registry serves the same kernels on every ISA.
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512}) {
      if (!isa_supported(isa)) continue;
      float out = 0.0f;
      find_type_ops(GgmlType::kQ6_K, isa)->gemm(kBlocks * kQK_K, w.data(), w_bytes, 1, a.data(), a_bytes, 1, &out, 1);
      CHECK(bits(out) == bits(expected));
    }
  }
  CHECK(orders_differ > 0);  // the cases tell the 8-lane order from one float chain
}

TEST_CASE("the AVX512-VNNI Q6_K gemm returns the scalar bits for batches of any size") {
  if (!has_avx512_vnni()) {
    WARN("no AVX512-VNNI on this CPU: gemm_q6_k_lanes_vnni not tested");
    return;
  }
  constexpr int kBlocks = 3, kWRows = 5, kMaxTok = 37;
  constexpr int64_t k = kBlocks * kQK_K;
  std::vector<float> wf(kWRows * k), xf(kMaxTok * k);
  for (size_t i = 0; i < wf.size(); ++i)
    wf[i] = lanes_test_value(static_cast<uint32_t>(i), 7) * static_cast<float>(1 << (3 * ((i % k) / 256)));
  for (size_t i = 0; i < xf.size(); ++i) xf[i] = lanes_test_value(static_cast<uint32_t>(i), 8);
  std::vector<uint8_t> w(kWRows * kBlocks * sizeof(BlockQ6K)), a(kMaxTok * kBlocks * sizeof(BlockQ8K));
  scalar::quantize_q6_k_ref(wf.data(), w.data(), kWRows * k);
  scalar::quantize_q8_k(xf.data(), a.data(), kMaxTok * k);
  // Extremes in the last row and token: all quants 63 with scale 127 (and -128), activations
  // -128 in one super-block: the largest 4-product sums and scaled lanes.
  {
    auto* blk = reinterpret_cast<BlockQ6K*>(w.data() + (kWRows - 1) * kBlocks * sizeof(BlockQ6K));
    std::memset(blk->ql, 0xFF, sizeof blk->ql);
    std::memset(blk->qh, 0xFF, sizeof blk->qh);
    for (int s = 0; s < 16; ++s) blk->scales[s] = static_cast<int8_t>(s % 2 ? 127 : -128);
    auto* act = reinterpret_cast<BlockQ8K*>(a.data() + (kMaxTok - 1) * kBlocks * sizeof(BlockQ8K));
    for (int e = 0; e < kQK_K; ++e) act->qs[e] = -128;
    for (int s = 0; s < 16; ++s) act->bsums[s] = -128 * 16;
  }
  const size_t ws = kBlocks * sizeof(BlockQ6K), as = kBlocks * sizeof(BlockQ8K);
  for (int n_tok : {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 32, kMaxTok}) {
    for (int t0 : {0, kMaxTok - n_tok}) {
      const uint8_t* at = a.data() + static_cast<size_t>(t0) * as;
      std::vector<float> ref(n_tok * kWRows), got(n_tok * kWRows, -1.0f);
      scalar::gemm_q6_k(k, w.data(), ws, kWRows, at, as, n_tok, ref.data(), kWRows);
      avx512::gemm_q6_k_lanes_vnni(k, w.data(), ws, kWRows, at, as, n_tok, got.data(), kWRows);
      INFO("n_tok " << n_tok << " first token " << t0);
      for (size_t i = 0; i < ref.size(); ++i) CHECK(bits(got[i]) == bits(ref[i]));
      // The decode-rows kernel it dispatches to below 17 tokens, also past its 16-token tile.
      std::vector<float> rows(n_tok * kWRows, -1.0f);
      avx512::gemm_q6_k_rows_vnni(k, w.data(), ws, kWRows, at, as, n_tok, rows.data(), kWRows);
      for (size_t i = 0; i < ref.size(); ++i) CHECK(bits(rows[i]) == bits(ref[i]));
    }
  }
}

TEST_CASE("the AVX512-VNNI Q6_K decode-rows kernel keeps the bits across its row blocks and k chunks") {
  if (!has_avx512_vnni()) {
    WARN("no AVX512-VNNI on this CPU: gemm_q6_k_rows_vnni not tested");
    return;
  }
  // 22 super-blocks (ffn_down's 5632): split into L1-sized chunks for every token count; 37
  // rows: two full 16-row blocks (or slices) and a partial one.
  constexpr int kBlocks = 22, kWRows = 37, kMaxTok = 33;
  constexpr int64_t k = kBlocks * kQK_K;
  std::vector<float> wf(kWRows * k), xf(kMaxTok * k);
  for (size_t i = 0; i < wf.size(); ++i)
    wf[i] = lanes_test_value(static_cast<uint32_t>(i), 9) * static_cast<float>(1 << ((i % k) / 256 % 7));
  for (size_t i = 0; i < xf.size(); ++i) xf[i] = lanes_test_value(static_cast<uint32_t>(i), 10);
  std::vector<uint8_t> w(kWRows * kBlocks * sizeof(BlockQ6K)), a(kMaxTok * kBlocks * sizeof(BlockQ8K));
  scalar::quantize_q6_k_ref(wf.data(), w.data(), kWRows * k);
  scalar::quantize_q8_k(xf.data(), a.data(), kMaxTok * k);
  const size_t ws = kBlocks * sizeof(BlockQ6K), as = kBlocks * sizeof(BlockQ8K);
  for (int n_tok : {2, 3, 8, 9, 16, 17, 33}) {  // past 16: token tiles inside 16-row slices
    std::vector<float> ref(n_tok * kWRows), got(n_tok * kWRows, -1.0f);
    scalar::gemm_q6_k(k, w.data(), ws, kWRows, a.data(), as, n_tok, ref.data(), kWRows);
    avx512::gemm_q6_k_rows_vnni(k, w.data(), ws, kWRows, a.data(), as, n_tok, got.data(), kWRows);
    INFO("n_tok " << n_tok);
    for (size_t i = 0; i < ref.size(); ++i) CHECK(bits(got[i]) == bits(ref[i]));
  }
}
