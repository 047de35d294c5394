// Streaming GGUF quantizer: header first (all output sizes are known from the plan), then each
// tensor converted row-chunk by row-chunk on n_threads and written at its aligned offset.
#include "engine/quantize/quantize_model.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "engine/base/error.h"
#include "gguf/gguf_writer.h"
#include "kernels/isa.h"
#include "kernels/legacy_kernels.h"
#include "kernels/type_ops.h"

namespace baton::quantize {
namespace {

template <class T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts only
  out.append(b, sizeof(T));
}

void put_string(std::string& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.append(s);
}

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

uint64_t tensor_bytes(const gguf::TensorInfo& t, GgmlType type) {
  const auto& info = require_ggml_type(type);
  return t.n_elements() / info.block_size * info.block_bytes;
}

// Header + tensor infos + padding to the data section, for the given output types.
std::string encode_header(const gguf::Metadata& md, const std::vector<gguf::TensorInfo>& tensors,
                          const std::vector<TensorPlan>& plan, uint64_t alignment) {
  std::string h;
  put<uint32_t>(h, 0x46554747);  // "GGUF"
  put<uint32_t>(h, 3);
  put<uint64_t>(h, tensors.size());
  put<uint64_t>(h, md.entries().size());
  for (const auto& [key, value] : md.entries()) {
    put_string(h, key);
    put<uint32_t>(h, static_cast<uint32_t>(value.type));
    gguf::encode_value(h, value, key);
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    const auto& t = tensors[plan[i].index];
    put_string(h, t.name);
    put<uint32_t>(h, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t d : t.ne) put<uint64_t>(h, d);
    put<uint32_t>(h, static_cast<uint32_t>(plan[i].type));
    offset = align_up(offset, alignment);
    put<uint64_t>(h, offset);
    offset += tensor_bytes(t, plan[i].type);
  }
  h.resize(align_up(h.size(), alignment), '\0');
  return h;
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

QuantizeResult quantize_model(const std::string& in_path, const std::string& out_path,
                              const QuantizeOptions& options) {
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
      fail<UnsupportedError>("quantize: tensor '{}' in '{}' has type {}, which this build cannot read",
                             t.name, in_path, ggml_type_name(t.type));
    if (!to || !to->from_float)
      fail<UnsupportedError>("quantize: no quantizer for type {} (tensor '{}')", ggml_type_name(plan[i].type),
                             t.name);
    ops[i] = {from, to};
  }

  gguf::Metadata md = file->metadata();
  md.set_uint32("general.quantization_version", 2);
  md.set_uint32("general.file_type", static_cast<uint32_t>(options.ftype));
  const uint64_t alignment = gguf::GgufWriter(md).alignment();
  const std::string header = encode_header(md, tensors, plan, alignment);

  const std::string tmp_path = out_path + ".tmp";
  std::ofstream out(tmp_path, std::ios::binary | std::ios::trunc);
  if (!out) fail<Error>("quantize: cannot create '{}': {}", tmp_path, std::strerror(errno));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));

  QuantizeResult result;
  std::vector<uint8_t> buffer;
  uint64_t offset = 0;
  const int n_threads = std::max(1, options.n_threads);
  for (size_t i = 0; i < plan.size(); ++i) {
    const auto& t = tensors[plan[i].index];
    const uint64_t padded = align_up(offset, alignment);
    if (padded > offset) {
      const std::string zeros(padded - offset, '\0');
      out.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
      offset = padded;
    }
    const auto src = file->tensor_data(t);
    const uint64_t n_out = tensor_bytes(t, plan[i].type);
    if (!plan[i].quantize) {
      out.write(reinterpret_cast<const char*>(src.data()), static_cast<std::streamsize>(src.size()));
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
      out.write(reinterpret_cast<const char*>(buffer.data()), static_cast<std::streamsize>(n_out));
      ++result.n_quantized;
    }
    file->release(t);
    offset += n_out;
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
