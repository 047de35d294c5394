#include "engine/pipeline/wire.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/base/error.h"
#include "engine/base/fp16.h"
#include "engine/model/row_hint.h"

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

TokenBatch from_wire(std::span<const net::TokenInfo> tokens, std::span<const uint8_t> hints) {
  TokenBatch batch;
  for (const auto& t : tokens) {
    if (t.pos > static_cast<uint32_t>(std::numeric_limits<int32_t>::max()))
      fail("position {} does not fit int32", t.pos);
    batch.add(t.seq_id, static_cast<int32_t>(t.pos), t.output);
  }
  if (!hints.empty() && hints.size() != tokens.size()) fail("{} row hints for {} tokens", hints.size(), tokens.size());
  for (uint8_t h : hints) RowHint::decode(h);  // a byte that is not a hint is refused here
  batch.hints.assign(hints.begin(), hints.end());
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
  t.trailer_at = round_up8(bytes);
  t.n_timings = timings.size();
  t.body = net::Payload::allocate(t.trailer_at + kTrailerHeadBytes + timings.size() * kTimingBytes);
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
  std::memset(out + bytes, 0, t.trailer_at + kTrailerHeadBytes - bytes);
  for (size_t i = 0; i < timings.size(); ++i) {
    const double v[5] = {timings[i].residence_ms, timings[i].compute_ms, timings[i].bytes_out, timings[i].hop_in_ms,
                         timings[i].hop_in_error_ms};
    std::memcpy(out + t.trailer_at + kTrailerHeadBytes + i * kTimingBytes, v, kTimingBytes);
  }
  t.ref.dtype = dtype;
  t.ref.shape = {n_rows, n_embd};
  t.ref.offset = 0;
  t.ref.bytes = bytes;
  return t;
}

int64_t steady_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

void stamp_sent(WireTensor& t, std::chrono::steady_clock::time_point sent, std::optional<double> last_residence_ms) {
  uint8_t* out = t.body.mutable_bytes().data();
  const int64_t ns = steady_ns(sent);
  std::memcpy(out + t.trailer_at, &ns, sizeof ns);
  if (last_residence_ms && t.n_timings > 0) {
    const double r = std::max(0.0, *last_residence_ms);
    std::memcpy(out + t.trailer_at + kTrailerHeadBytes + (t.n_timings - 1) * kTimingBytes, &r, sizeof r);
  }
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

std::optional<Trailer> read_trailer(const net::TensorRef& ref, const net::Payload& body, const char* what) {
  const size_t end = ref.offset + ref.bytes;  // checked by read_tensor / check_message
  if (body.size() <= end) return std::nullopt;
  const size_t at = round_up8(end);
  const size_t rest = body.size() > at ? body.size() - at : 0;
  if (body.size() < at + kTrailerHeadBytes || (rest - kTrailerHeadBytes) % kTimingBytes != 0 ||
      (rest - kTrailerHeadBytes) / kTimingBytes > kMaxTimings)
    fail("{}: the {} bytes after the hidden tensor are not a timing trailer", what, body.size() - end);
  Trailer out;
  std::memcpy(&out.sent_ns, body.data() + at, sizeof out.sent_ns);
  out.stages.resize((rest - kTrailerHeadBytes) / kTimingBytes);
  for (size_t i = 0; i < out.stages.size(); ++i) {
    double v[5];
    std::memcpy(v, body.data() + at + kTrailerHeadBytes + i * kTimingBytes, kTimingBytes);
    for (int k = 0; k < 5; ++k)
      if (!std::isfinite(v[k]) || (k < 3 && v[k] < 0))
        fail("{}: timing trailer entry {} field {} holds {}", what, i, k, v[k]);
    out.stages[i] = {v[0], v[1], v[2], v[3], v[4]};
  }
  return out;
}

HopTime hop_time(int64_t sent_ns, std::chrono::steady_clock::time_point received,
                 const std::optional<net::ClockEstimate>& clock) {
  if (!clock || sent_ns == 0) return {};
  // (received - sent) + offset, as differences first so no i64 overflows for sane clocks.
  const int64_t raw = steady_ns(received) - sent_ns;
  return {static_cast<double>(raw + clock->offset_ns) / 1e6, static_cast<double>(clock->error_ns) / 1e6};
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
