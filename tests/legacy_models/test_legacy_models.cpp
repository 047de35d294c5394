// The float and legacy-quant kernels against real files written by llama.cpp: the tl256
// synthetic model in F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 (made by llama-quantize from
// tl256-F32.gguf, without an importance matrix). Lives apart from tests/kernels because it
// needs the GGUF reader.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "fixtures.h"
#include "gguf/gguf_file.h"
#include "kernels/core/isa.h"
#include "kernels/block32/kernels.h"
#include "kernels/core/type_ops.h"

using namespace baton;
using namespace baton::kernels;

namespace {

const GgmlType kMine[] = {GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0,
                          GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1};

bool is_mine(GgmlType t) {
  for (GgmlType m : kMine)
    if (m == t) return true;
  return false;
}

std::string file_for(GgmlType t) {
  std::string name(ggml_type_name(t));
  for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return "models/synthetic/tl256-" + name + ".gguf";
}

std::vector<Isa> cpu_isas() {
  std::vector<Isa> isas;
  for (int i = 0; i <= static_cast<int>(detected_isa()); ++i)
    if (isa_supported(static_cast<Isa>(i))) isas.push_back(static_cast<Isa>(i));
  return isas;
}

double rel_rms(const float* x, const std::vector<float>& y) {
  double se = 0, sx = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    se += (static_cast<double>(y[i]) - x[i]) * (static_cast<double>(y[i]) - x[i]);
    sx += static_cast<double>(x[i]) * x[i];
  }
  return std::sqrt(se / sx);
}

// Largest |y - x| / bound over the tensor, where the bound is the format's worst case:
// F16: 2^-11 |x| (2^-24 absolute below the normal range), BF16: 2^-8 |x|; per 32-element block
// with amax = max|x| and range = max - min: Q8_0 amax/254, Q4_0 amax/8 (the positive extreme
// clamps to 7), Q5_0 amax/16, Q4_1 range/30, Q5_1 range/62; plus the f16 rounding of the scale
// (2^-11 of the largest |q d|: amax, or range for Q4_1/Q5_1) and of the min (2^-11 |min|).
double worst_vs_bound(GgmlType t, const float* x, const std::vector<float>& y) {
  double worst = 0;
  if (t == GgmlType::kF16 || t == GgmlType::kBF16) {
    const double rel = t == GgmlType::kF16 ? 0x1p-11 : 0x1p-8;
    for (size_t i = 0; i < y.size(); ++i)
      worst = std::max(worst, std::fabs(double(y[i]) - x[i]) / (rel * std::fabs(x[i]) + 0x1p-24));
    return worst;
  }
  double per_amax = 0, per_range = 0;
  switch (t) {
    case GgmlType::kQ8_0: per_amax = 1.0 / 254; break;
    case GgmlType::kQ4_0: per_amax = 1.0 / 8; break;
    case GgmlType::kQ5_0: per_amax = 1.0 / 16; break;
    case GgmlType::kQ4_1: per_range = 1.0 / 30; break;
    case GgmlType::kQ5_1: per_range = 1.0 / 62; break;
    default: FAIL("no bound for " << ggml_type_name(t));
  }
  for (size_t b = 0; b < y.size() / 32; ++b) {
    double amax = 0, mn = 1e30, mx = -1e30;
    for (int j = 0; j < 32; ++j) {
      const double v = x[b * 32 + j];
      amax = std::max(amax, std::fabs(v));
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
    const double f16 = per_amax > 0 ? amax : (mx - mn) + std::fabs(mn);
    const double bound = (per_amax * amax + per_range * (mx - mn) + std::ldexp(f16, -11)) * (1 + 1e-6);
    for (int j = 0; j < 32; ++j) worst = std::max(worst, std::fabs(double(y[b * 32 + j]) - x[b * 32 + j]) / bound);
  }
  return worst;
}

}  // namespace

TEST_CASE(
    "llama.cpp's F16, BF16 and legacy-quant tensors dequantize to the F32 model within each format's bound, on every "
    "ISA") {
  auto ref = gguf::GgufFile::open(test::shared_path("models/synthetic/tl256-F32.gguf"));
  std::map<GgmlType, int> seen;
  for (GgmlType file_type : kMine) {
    auto file = gguf::GgufFile::open(test::shared_path(file_for(file_type)));
    for (const auto& t : file->tensors()) {
      if (!is_mine(t.type)) continue;
      const auto* x = reinterpret_cast<const float*>(ref->tensor_data(ref->require_tensor(t.name)).data());
      const size_t n = t.n_elements();
      std::vector<float> y(n);
      find_type_ops(t.type, Isa::kScalar)->to_float(file->tensor_data(t).data(), y.data(), static_cast<int64_t>(n));
      const double worst = worst_vs_bound(t.type, x, y), err = rel_rms(x, y);
      INFO(file_for(file_type) << " " << t.name << " " << ggml_type_name(t.type) << ": worst error / bound = " << worst
                               << ", relative rms error = " << err);
      CHECK(worst <= 1.0);
      CHECK(err > 0);
      for (Isa isa : cpu_isas()) {
        std::vector<float> z(n, -1.0f);
        find_type_ops(t.type, isa)->to_float(file->tensor_data(t).data(), z.data(), static_cast<int64_t>(n));
        CHECK(std::memcmp(z.data(), y.data(), n * sizeof(float)) == 0);
      }
      ++seen[t.type];
    }
  }
  CHECK(seen.size() == std::size(kMine));
}

TEST_CASE("our quantizers reproduce llama-quantize's F16, BF16 and legacy-quant bytes from the F32 model") {
  auto ref = gguf::GgufFile::open(test::shared_path("models/synthetic/tl256-F32.gguf"));
  for (GgmlType file_type : kMine) {
    auto file = gguf::GgufFile::open(test::shared_path(file_for(file_type)));
    int tensors = 0;
    for (const auto& t : file->tensors()) {
      if (t.type != file_type) continue;
      INFO(file_for(file_type) << " " << t.name);
      const auto* x = reinterpret_cast<const float*>(ref->tensor_data(ref->require_tensor(t.name)).data());
      const auto expected = file->tensor_data(t);
      const int64_t n = static_cast<int64_t>(t.n_elements());
      const TypeOps* ops = find_type_ops(t.type, active_isa());
      std::vector<uint8_t> ours(expected.size());
      // Q8_0's from_float is the activation quantizer; files are written with the _ref one.
      if (t.type == GgmlType::kQ8_0) scalar::quantize_q8_0_ref(x, ours.data(), n);
      else ops->from_float(x, ours.data(), n);
      size_t differing = 0;
      for (size_t i = 0; i < ours.size(); ++i) differing += ours[i] != expected[i];
      CHECK(differing == 0);
      // the task's bar: our round-trip error within 5% of llama.cpp's (implied by equal bytes)
      std::vector<float> y_ours(n), y_theirs(n);
      ops->to_float(ours.data(), y_ours.data(), n);
      ops->to_float(expected.data(), y_theirs.data(), n);
      CHECK(rel_rms(x, y_ours) <= 1.05 * rel_rms(x, y_theirs));
      if (t.type == GgmlType::kQ8_0) {  // the activation quantizer rounds ties to even instead
        std::vector<uint8_t> act(expected.size());
        ops->from_float(x, act.data(), n);
        size_t act_differing = 0;
        for (size_t i = 0; i < act.size(); ++i) act_differing += act[i] != expected[i];
        CHECK(act_differing <= expected.size() / 10000);
      }
      ++tensors;
    }
    INFO(file_for(file_type));
    CHECK(tensors >= 7);
  }
}

TEST_CASE("gemm on llama.cpp's legacy-quant tensors matches the float product of the dequantized operands") {
  for (GgmlType type : {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ8_0,
                        GgmlType::kF16, GgmlType::kBF16}) {
    auto file = gguf::GgufFile::open(test::shared_path(file_for(type)));
    const auto& t = file->require_tensor("blk.1.ffn_down.weight");  // [256, 768]: k = 768
    REQUIRE(t.type == type);
    const int64_t k = static_cast<int64_t>(t.row_length()), n_rows = static_cast<int64_t>(t.n_rows());
    const TypeOps* act_ops = find_type_ops(find_type_ops(type, Isa::kScalar)->vec_dot_type, Isa::kScalar);
    const auto& act_info = require_ggml_type(act_ops->type);
    const size_t a_stride = static_cast<size_t>(k / act_info.block_size) * act_info.block_bytes;
    const int64_t n_tok = 6;
    std::vector<float> act(static_cast<size_t>(n_tok * k));
    for (size_t i = 0; i < act.size(); ++i) act[i] = std::sin(0.37f * static_cast<float>(i)) * 0.5f;
    std::vector<uint8_t> a(a_stride * n_tok);
    for (int64_t tk = 0; tk < n_tok; ++tk) act_ops->from_float(act.data() + tk * k, a.data() + tk * a_stride, k);
    std::vector<float> w(static_cast<size_t>(k)), ad(static_cast<size_t>(k));
    for (Isa isa : cpu_isas()) {
      std::vector<float> out(static_cast<size_t>(n_rows * n_tok), -1.0f);
      find_type_ops(type, isa)->gemm(k, file->tensor_data(t).data(), t.row_bytes(), n_rows, a.data(), a_stride, n_tok,
                                     out.data(), static_cast<size_t>(n_rows));
      for (int64_t r : {int64_t{0}, int64_t{77}, n_rows - 1}) {
        find_type_ops(type, Isa::kScalar)->to_float(file->tensor_data(t).data() + r * t.row_bytes(), w.data(), k);
        for (int64_t tk = 0; tk < n_tok; ++tk) {
          act_ops->to_float(a.data() + tk * a_stride, ad.data(), k);
          double dot = 0, mag = 0;
          for (int64_t i = 0; i < k; ++i) {
            dot += static_cast<double>(w[i]) * ad[i];
            mag += std::fabs(static_cast<double>(w[i]) * ad[i]);
          }
          // Q4_1/Q5_1 use llama.cpp's s = f16(d * sum q) for the min term: allow its rounding
          const double slack = act_ops->type == GgmlType::kQ8_1 ? 2e-3 * mag : 0;
          INFO(ggml_type_name(type) << " " << isa_name(isa) << " row " << r << " token " << tk);
          CHECK(std::fabs(out[static_cast<size_t>(tk * n_rows + r)] - dot) <= 1e-5 * mag + slack);
        }
      }
    }
  }
}

TEST_CASE("the Q8_0 stories260K file, whose ffn_down rows are not whole blocks, is refused naming the tensor") {
  try {
    gguf::GgufFile::open(test::shared_path("models/tinyllamas-stories-260k-q8_0.gguf"));
    FAIL("opened");
  } catch (const FormatError& e) {
    CHECK_THAT(e.what(), Catch::Contains("ffn_down.weight"));
  }
}
