#include "engine/pipeline/wire.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "engine/base/error.h"
#include "engine/base/fp16.h"

namespace baton::pipeline {

std::vector<net::TokenInfo> to_wire(const TokenBatch& batch) {
  std::vector<net::TokenInfo> out;
  out.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch.seq_ids[i] > std::numeric_limits<uint32_t>::max())
      fail("sequence id {} does not fit the wire's 32 bits", batch.seq_ids[i]);
    if (batch.positions[i] < 0) fail("token {} has negative position {}", i, batch.positions[i]);
    out.push_back({static_cast<uint32_t>(batch.seq_ids[i]), static_cast<uint32_t>(batch.positions[i]),
                   batch.output[i] != 0});
  }
  return out;
}

TokenBatch from_wire(std::span<const net::TokenInfo> tokens) {
  TokenBatch batch;
  for (const auto& t : tokens) {
    if (t.pos > static_cast<uint32_t>(std::numeric_limits<int32_t>::max()))
      fail("position {} does not fit int32", t.pos);
    batch.add(t.seq_id, static_cast<int32_t>(t.pos), t.output);
  }
  return batch;
}

std::optional<net::DType> parse_activation_dtype(std::string_view name) {
  if (name == "f32") return net::DType::kF32;
  if (name == "f16") return net::DType::kF16;
  if (name == "bf16") return net::DType::kBF16;
  return std::nullopt;
}

bool is_activation_dtype(net::DType dtype) {
  return dtype == net::DType::kF32 || dtype == net::DType::kF16 || dtype == net::DType::kBF16;
}

namespace {

size_t round_up8(size_t n) { return (n + 7) & ~size_t{7}; }

}  // namespace

WireTensor make_tensor(const float* rows, size_t n_rows, size_t n_embd, net::DType dtype,
                       std::span<const StageTiming> timings) {
  if (!is_activation_dtype(dtype)) fail("activations cannot travel as {}", net::to_string(dtype));
  WireTensor t;
  const size_t n = n_rows * n_embd;
  const size_t bytes = n * net::dtype_size(dtype);
  const size_t trailer_at = timings.empty() ? bytes : round_up8(bytes);
  t.body = net::Payload::allocate(trailer_at + timings.size() * kTimingBytes);
  uint8_t* out = t.body.mutable_bytes().data();
  if (dtype == net::DType::kF32) {
    if (bytes) std::memcpy(out, rows, bytes);
  } else {
    auto* h = reinterpret_cast<uint16_t*>(out);
    if (dtype == net::DType::kF16)
      for (size_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(rows[i]);
    else
      for (size_t i = 0; i < n; ++i) h[i] = fp32_to_bf16(rows[i]);
  }
  if (trailer_at > bytes) std::memset(out + bytes, 0, trailer_at - bytes);
  for (size_t i = 0; i < timings.size(); ++i) {
    const double v[3] = {timings[i].residence_ms, timings[i].compute_ms, timings[i].bytes_out};
    std::memcpy(out + trailer_at + i * kTimingBytes, v, kTimingBytes);
  }
  t.ref.dtype = dtype;
  t.ref.shape = {n_rows, n_embd};
  t.ref.offset = 0;
  t.ref.bytes = bytes;
  return t;
}

void read_tensor(const net::TensorRef& ref, const net::Payload& body, size_t n_rows, size_t n_embd,
                 std::vector<float>& out, const char* what) {
  if (!is_activation_dtype(ref.dtype))
    fail("{}: hidden tensor has dtype {}, expected f32, f16 or bf16", what, net::to_string(ref.dtype));
  if (ref.shape.size() != 2 || ref.shape[0] != n_rows || ref.shape[1] != n_embd)
    fail("{}: hidden tensor shape does not match [{}, {}]", what, n_rows, n_embd);
  const size_t n = n_rows * n_embd;
  if (ref.offset > body.size() || ref.bytes > body.size() - ref.offset || ref.bytes != n * net::dtype_size(ref.dtype))
    fail("{}: hidden tensor bytes {} at offset {} do not fit a body of {} bytes", what, ref.bytes, ref.offset,
         body.size());
  out.resize(n);
  const uint8_t* in = body.data() + ref.offset;
  if (ref.dtype == net::DType::kF32) {
    if (ref.bytes) std::memcpy(out.data(), in, ref.bytes);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, in + 2 * i, 2);
    out[i] = ref.dtype == net::DType::kF16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
  }
}

std::vector<StageTiming> read_timings(const net::TensorRef& ref, const net::Payload& body, const char* what) {
  const size_t end = ref.offset + ref.bytes;  // checked by read_tensor / check_message
  if (body.size() <= end) return {};
  const size_t at = round_up8(end);
  const size_t rest = body.size() > at ? body.size() - at : 0;
  if (body.size() < at || rest % kTimingBytes != 0 || rest / kTimingBytes > kMaxTimings)
    fail("{}: the {} bytes after the hidden tensor are not a timing trailer", what, body.size() - end);
  std::vector<StageTiming> out(rest / kTimingBytes);
  for (size_t i = 0; i < out.size(); ++i) {
    double v[3];
    std::memcpy(v, body.data() + at + i * kTimingBytes, kTimingBytes);
    for (double x : v)
      if (!std::isfinite(x) || x < 0) fail("{}: timing trailer entry {} holds {}", what, i, x);
    out[i] = {v[0], v[1], v[2]};
  }
  return out;
}

std::optional<uint64_t> micro_batch_of(const net::ErrorReport& report) {
  static constexpr std::string_view kKey = "micro-batch ";
  const auto at = report.message.find(kKey);
  if (at == std::string::npos) return std::nullopt;
  size_t i = at + kKey.size();
  uint64_t id = 0;
  bool any = false;
  for (; i < report.message.size() && report.message[i] >= '0' && report.message[i] <= '9'; ++i) {
    if (id > (std::numeric_limits<uint64_t>::max() - 9) / 10) return std::nullopt;
    id = id * 10 + static_cast<uint64_t>(report.message[i] - '0');
    any = true;
  }
  if (!any) return std::nullopt;
  return id;
}

}  // namespace baton::pipeline
