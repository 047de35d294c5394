// The K-quant kernels against real files written by llama.cpp's llama-quantize: the tl256
// synthetic models in Q2_K, Q3_K_M, Q4_K_M, Q5_K_M and Q6_K (which mix Q2_K..Q6_K tensors) and
// the F32 model they were quantized from. Lives apart from tests/kernels because it needs the
// GGUF reader.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "fixtures.h"
#include "gguf/gguf_file.h"
#include "kernels/kquant/blocks.h"
#include "kernels/core/isa.h"
#include "kernels/core/type_ops.h"

using namespace baton;
using namespace baton::kernels;

namespace {

const char* const kFiles[] = {"tl256-Q2_K", "tl256-Q3_K_M", "tl256-Q4_K_M", "tl256-Q5_K_M", "tl256-Q6_K"};

bool is_k_quant(GgmlType t) {
  return t == GgmlType::kQ2_K || t == GgmlType::kQ3_K || t == GgmlType::kQ4_K || t == GgmlType::kQ5_K ||
         t == GgmlType::kQ6_K;
}

// Relative RMS error (||deq - x|| / ||x||) each format must stay under on these normal-distributed
// weights. llama.cpp's own files measure 0.294 / 0.150 / 0.0717 / 0.0359 / 0.0177.
double rms_bound(GgmlType t) {
  switch (t) {
    case GgmlType::kQ2_K: return 0.30;
    case GgmlType::kQ3_K: return 0.155;
    case GgmlType::kQ4_K: return 0.074;
    case GgmlType::kQ5_K: return 0.037;
    case GgmlType::kQ6_K: return 0.0185;
    default: return 0;
  }
}

double rel_rms(const float* x, const std::vector<float>& y) {
  double se = 0, sx = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    se += (static_cast<double>(y[i]) - x[i]) * (static_cast<double>(y[i]) - x[i]);
    sx += static_cast<double>(x[i]) * x[i];
  }
  return std::sqrt(se / sx);
}

std::vector<Isa> cpu_isas() {
  std::vector<Isa> isas;
  for (int i = 0; i <= static_cast<int>(detected_isa()); ++i)
    if (isa_supported(static_cast<Isa>(i))) isas.push_back(static_cast<Isa>(i));
  return isas;
}

}  // namespace

TEST_CASE("llama.cpp's K-quant tensors dequantize to the F32 model within each format's error, on every ISA") {
  auto ref = gguf::GgufFile::open(test::shared_path("models/synthetic/tl256-F32.gguf"));
  std::map<GgmlType, int> seen;
  for (const char* name : kFiles) {
    auto file = gguf::GgufFile::open(test::shared_path(std::string("models/synthetic/") + name + ".gguf"));
    for (const auto& t : file->tensors()) {
      if (!is_k_quant(t.type)) continue;
      INFO(name << " " << t.name << " " << ggml_type_name(t.type));
      const auto* x = reinterpret_cast<const float*>(ref->tensor_data(ref->require_tensor(t.name)).data());
      const size_t n = t.n_elements();
      std::vector<float> y(n);
      const TypeOps* scalar_ops = find_type_ops(t.type, Isa::kScalar);
      REQUIRE(scalar_ops);
      scalar_ops->to_float(file->tensor_data(t).data(), y.data(), static_cast<int64_t>(n));
      const double err = rel_rms(x, y);
      CHECK(err < rms_bound(t.type));
      CHECK(err > 0.3 * rms_bound(t.type));  // a wrong layout would not be this close, nor this far
      for (Isa isa : cpu_isas()) {
        std::vector<float> z(n, -1.0f);
        find_type_ops(t.type, isa)->to_float(file->tensor_data(t).data(), z.data(), static_cast<int64_t>(n));
        CHECK(std::memcmp(z.data(), y.data(), n * sizeof(float)) == 0);
      }
      ++seen[t.type];
    }
  }
  CHECK(seen.size() == 5);  // every K-quant type occurs in these files
}

TEST_CASE("our reference quantizers reproduce llama-quantize's K-quant bytes from the F32 model") {
  auto ref = gguf::GgufFile::open(test::shared_path("models/synthetic/tl256-F32.gguf"));
  for (const char* name : kFiles) {
    auto file = gguf::GgufFile::open(test::shared_path(std::string("models/synthetic/") + name + ".gguf"));
    for (const auto& t : file->tensors()) {
      if (!is_k_quant(t.type)) continue;
      INFO(name << " " << t.name << " " << ggml_type_name(t.type));
      const auto* x = reinterpret_cast<const float*>(ref->tensor_data(ref->require_tensor(t.name)).data());
      const auto expected = file->tensor_data(t);
      std::vector<uint8_t> ours(expected.size());
      const TypeOps* ops = find_type_ops(t.type, active_isa());
      REQUIRE(ops->from_float);
      ops->from_float(x, ours.data(), static_cast<int64_t>(t.n_elements()));
      size_t differing = 0;
      for (size_t i = 0; i < ours.size(); ++i) differing += ours[i] != expected[i];
      CHECK(differing == 0);
      // The task's bar (round-trip RMS within 5% of llama.cpp's) follows; checked for clarity.
      std::vector<float> y_ours(t.n_elements()), y_theirs(t.n_elements());
      ops->to_float(ours.data(), y_ours.data(), static_cast<int64_t>(y_ours.size()));
      ops->to_float(expected.data(), y_theirs.data(), static_cast<int64_t>(y_theirs.size()));
      CHECK(rel_rms(x, y_ours) <= 1.05 * rel_rms(x, y_theirs));
    }
  }
}

TEST_CASE("gemm on llama.cpp's K-quant tensors gives the same bits on every ISA and matches the float product") {
  auto file = gguf::GgufFile::open(test::shared_path("models/synthetic/tl256-Q3_K_M.gguf"));
  for (const auto& t : file->tensors()) {
    if (!is_k_quant(t.type) || t.name.rfind("blk.1.", 0) != 0) continue;
    INFO(t.name << " " << ggml_type_name(t.type));
    const int64_t k = static_cast<int64_t>(t.row_length()), n_rows = static_cast<int64_t>(t.n_rows());
    const size_t a_stride = static_cast<size_t>(k / kQK_K) * sizeof(BlockQ8K);
    for (int64_t n_tok : {1, 3, 20}) {
      std::vector<float> act(static_cast<size_t>(n_tok * k));
      for (size_t i = 0; i < act.size(); ++i) act[i] = std::sin(0.37f * static_cast<float>(i)) * 0.5f;
      std::vector<uint8_t> a(a_stride * n_tok);
      const TypeOps* q8k = find_type_ops(GgmlType::kQ8_K, Isa::kScalar);
      for (int64_t tk = 0; tk < n_tok; ++tk) q8k->from_float(act.data() + tk * k, a.data() + tk * a_stride, k);

      std::vector<float> ref(static_cast<size_t>(n_rows * n_tok));
      find_type_ops(t.type, Isa::kScalar)
          ->gemm(k, file->tensor_data(t).data(), t.row_bytes(), n_rows, a.data(), a_stride, n_tok, ref.data(),
                 static_cast<size_t>(n_rows));
      for (Isa isa : cpu_isas()) {
        std::vector<float> out(ref.size(), -1.0f);
        find_type_ops(t.type, isa)
            ->gemm(k, file->tensor_data(t).data(), t.row_bytes(), n_rows, a.data(), a_stride, n_tok, out.data(),
                   static_cast<size_t>(n_rows));
        CHECK(std::memcmp(out.data(), ref.data(), ref.size() * sizeof(float)) == 0);
      }
      // Against double-precision arithmetic on the dequantized operands (row 5, last token).
      std::vector<float> w(static_cast<size_t>(k)), ad(static_cast<size_t>(k));
      find_type_ops(t.type, Isa::kScalar)->to_float(file->tensor_data(t).data() + 5 * t.row_bytes(), w.data(), k);
      q8k->to_float(a.data() + (n_tok - 1) * a_stride, ad.data(), k);
      double dot = 0, mag = 0;
      for (int64_t i = 0; i < k; ++i) {
        dot += static_cast<double>(w[i]) * ad[i];
        mag += std::fabs(static_cast<double>(w[i]) * ad[i]);
      }
      CHECK(std::fabs(ref[static_cast<size_t>((n_tok - 1) * n_rows + 5)] - dot) <= 1e-5 * mag);
    }
  }
}
