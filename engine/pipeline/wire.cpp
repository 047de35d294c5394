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
    out.push_back(
        {static_cast<uint32_t>(batch.seq_ids[i]), static_cast<uint32_t>(batch.positions[i]), batch.output[i] != 0});
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

WireTensor make_tensor(const float* rows, size_t n_rows, size_t n_embd, net::DType dtype) {
  if (!is_activation_dtype(dtype)) fail("activations cannot travel as {}", net::to_string(dtype));
  WireTensor t;
  const size_t n = n_rows * n_embd;
  const size_t bytes = n * net::dtype_size(dtype);
  t.body = net::Payload::allocate(bytes);
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
  t.ref.dtype = dtype;
  t.ref.shape = {n_rows, n_embd};
  t.ref.offset = 0;
  t.ref.bytes = bytes;
  return t;
}

int64_t steady_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

namespace {

void stamp_timings(int64_t& sent_ns, std::vector<StageTiming>& timings, std::chrono::steady_clock::time_point sent,
                   std::optional<double> last_residence_ms) {
  sent_ns = steady_ns(sent);
  if (last_residence_ms && !timings.empty()) timings.back().residence_ms = std::max(0.0, *last_residence_ms);
}

}  // namespace

void stamp_sent(net::Forward& f, std::chrono::steady_clock::time_point sent, std::optional<double> last_residence_ms) {
  stamp_timings(f.sent_ns, f.timings, sent, last_residence_ms);
}

void stamp_sent(net::Hidden& h, std::chrono::steady_clock::time_point sent, std::optional<double> last_residence_ms) {
  stamp_timings(h.sent_ns, h.timings, sent, last_residence_ms);
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

HopTime hop_time(int64_t sent_ns, std::chrono::steady_clock::time_point received,
                 const std::optional<net::ClockEstimate>& clock) {
  if (!clock || sent_ns == 0) return {};
  // (received - sent) + offset, as differences first so no i64 overflows for sane clocks.
  const int64_t raw = steady_ns(received) - sent_ns;
  return {static_cast<double>(raw + clock->offset_ns) / 1e6, static_cast<double>(clock->error_ns) / 1e6};
}

}  // namespace baton::pipeline
