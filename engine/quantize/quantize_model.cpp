// Streaming GGUF quantizer: the GgufWriter's header first (all output sizes are known from the
// plan, tensors declared), then each tensor converted row-chunk by row-chunk on n_threads and
// streamed through the writer at its aligned offset.
#include "engine/quantize/quantize_model.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "engine/base/error.h"
#include "gguf/gguf_writer.h"
#include "kernels/core/isa.h"
#include "kernels/block32/kernels.h"
#include "kernels/core/type_ops.h"

namespace baton::quantize {
namespace {

uint64_t tensor_bytes(const gguf::TensorInfo& t, GgmlType type) {
  const auto& info = require_ggml_type(type);
  return t.n_elements() / info.block_size * info.block_bytes;
}

// The weight quantizer of a type: the table's scalar from_float, except for Q8_0 whose table
// entry is the activation quantizer (rounds ties differently from llama-quantize's roundf).
kernels::FromFloatFn weight_quantizer(const kernels::TypeOps& to) {
  return to.type == GgmlType::kQ8_0 ? &kernels::scalar::quantize_q8_0_ref : to.from_float;
}

// Converts rows [r0, r1) of `t` from its type to `to` through f32.
void convert_rows(const gguf::TensorInfo& t, const uint8_t* src, const kernels::TypeOps& from,
                  const kernels::TypeOps& to, uint8_t* dst, uint64_t r0, uint64_t r1) {
  const kernels::FromFloatFn quantize_row = weight_quantizer(to);
  const int64_t k = static_cast<int64_t>(t.row_length());
  const uint64_t src_row = t.row_bytes();
  const auto& to_info = require_ggml_type(to.type);
  const uint64_t dst_row = t.row_length() / to_info.block_size * to_info.block_bytes;
  std::vector<float> row(static_cast<size_t>(k));
  for (uint64_t r = r0; r < r1; ++r) {
    from.to_float(src + r * src_row, row.data(), k);
    quantize_row(row.data(), dst + r * dst_row, k);
  }
}

}  // namespace

QuantizeResult quantize_model(const std::string& in_path, const std::string& out_path, const QuantizeOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(out_path, ec) && fs::equivalent(in_path, out_path, ec))
    fail<Error>("quantize: output '{}' is the input file", out_path);
  const auto file = gguf::GgufFile::open(in_path);
  if (file->n_parts() != 1)
    fail<UnsupportedError>("quantize: '{}' is a split model ({} parts); merge it first", in_path, file->n_parts());
  const auto& tensors = file->tensors();
  const std::vector<TensorPlan> plan = plan_tensor_types(*file, options.ftype);

  // the kernels each conversion needs, checked before anything is written
  const kernels::Isa isa = kernels::active_isa();
  std::vector<std::pair<const kernels::TypeOps*, const kernels::TypeOps*>> ops(tensors.size(), {nullptr, nullptr});
  for (size_t i = 0; i < plan.size(); ++i) {
    if (!plan[i].quantize) continue;
    const auto& t = tensors[plan[i].index];
    const auto* from = kernels::find_type_ops(t.type, isa);
    // the scalar quantizers are ggml's reference ones (llama-quantize's); SIMD from_float
    // variants are the activation quantizers, which round ties differently
    const auto* to = kernels::find_type_ops(plan[i].type, kernels::Isa::kScalar);
    if (!from || !from->to_float)
      fail<UnsupportedError>("quantize: tensor '{}' in '{}' has type {}, which this build cannot read", t.name, in_path,
                             ggml_type_name(t.type));
    if (!to || !to->from_float)
      fail<UnsupportedError>("quantize: no quantizer for type {} (tensor '{}')", ggml_type_name(plan[i].type), t.name);
    ops[i] = {from, to};
  }

  gguf::Metadata md = file->metadata();
  md.set_uint32("general.quantization_version", 2);
  md.set_uint32("general.file_type", static_cast<uint32_t>(options.ftype));
  gguf::GgufWriter writer(std::move(md));
  for (const auto& p : plan) writer.declare_tensor(tensors[p.index].name, p.type, tensors[p.index].ne);

  const std::string tmp_path = out_path + ".tmp";
  std::ofstream out(tmp_path, std::ios::binary | std::ios::trunc);
  if (!out) fail<Error>("quantize: cannot create '{}': {}", tmp_path, std::strerror(errno));
  // The writer's errors name the tensor; these name the file too.
  auto written = [&](const char* what, auto&& write) {
    try {
      write();
    } catch (const Error& e) {
      fail<Error>("quantize: writing {} of '{}' failed: {} ({})", what, tmp_path, e.what(), std::strerror(errno));
    }
  };
  written("the header", [&] { writer.write_header(out); });

  QuantizeResult result;
  std::vector<uint8_t> buffer;
  const int n_threads = std::max(1, options.n_threads);
  for (size_t i = 0; i < plan.size(); ++i) {
    const auto& t = tensors[plan[i].index];
    const auto src = file->tensor_data(t);
    const uint64_t n_out = tensor_bytes(t, plan[i].type);
    if (!plan[i].quantize) {
      written("a tensor", [&] { writer.write_data(out, i, src); });
    } else {
      buffer.resize(n_out);
      const uint64_t n_rows = t.n_rows();
      const uint64_t per = (n_rows + n_threads - 1) / n_threads;
      std::vector<std::thread> workers;
      for (int w = 1; w < n_threads && static_cast<uint64_t>(w) * per < n_rows; ++w)
        workers.emplace_back(convert_rows, std::cref(t), src.data(), std::cref(*ops[i].first),
                             std::cref(*ops[i].second), buffer.data(), w * per, std::min(n_rows, (w + 1) * per));
      convert_rows(t, src.data(), *ops[i].first, *ops[i].second, buffer.data(), 0, std::min(n_rows, per));
      for (auto& w : workers) w.join();
      written("a tensor", [&] { writer.write_data(out, i, buffer); });
      ++result.n_quantized;
    }
    file->release(t);
    result.in_bytes += t.n_bytes;
    result.out_bytes += n_out;
    if (!out) fail<Error>("quantize: writing '{}' failed at tensor '{}': {}", tmp_path, t.name, std::strerror(errno));
    if (options.on_tensor) options.on_tensor(i, tensors.size(), t, plan[i].type);
  }
  out.close();
  if (!out) fail<Error>("quantize: closing '{}' failed: {}", tmp_path, std::strerror(errno));
  fs::rename(tmp_path, out_path, ec);
  if (ec) fail<Error>("quantize: cannot rename '{}' to '{}': {}", tmp_path, out_path, ec.message());
  return result;
}

}  // namespace baton::quantize
